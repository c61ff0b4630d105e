import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Account, AccountsService } from '../accounts/index.ts';

declare module 'fastify' {
  interface FastifyRequest {
    account: Account;
  }
  interface FastifyContextConfig {
    /** The `error` text for a missing or invalid key on this route; `Unauthorized` unless the spec says otherwise. */
    unauthorizedMessage?: string;
  }
}

function bearerToken(request: FastifyRequest): string | undefined {
  const header = request.headers.authorization;
  const match = header?.match(/^Bearer\s+(\S+)\s*$/i);
  return match?.[1];
}

/** Requires `Authorization: Bearer <key>` on every route registered in the given scope. */
export function requireApiKey(scope: FastifyInstance, accounts: AccountsService) {
  scope.decorateRequest('account', null as unknown as Account);
  scope.addHook('onRequest', async (request, reply) => {
    const token = bearerToken(request);
    const account = token ? await accounts.authenticate(token) : undefined;
    if (!account) {
      reply.header('WWW-Authenticate', 'Bearer realm="Mailroom"');
      return reply.code(401).send({ error: request.routeOptions.config.unauthorizedMessage ?? 'Unauthorized' });
    }
    request.account = account;
  });
}
