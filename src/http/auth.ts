import type { FastifyInstance } from 'fastify';
import type { Account, AccountsService } from '../accounts/index.ts';

declare module 'fastify' {
  interface FastifyRequest {
    account: Account;
    /** The id of the API key the request came with. */
    apiKeyId: string;
  }
  interface FastifyContextConfig {
    /** The `error` text for a missing or invalid key on this route; `Unauthorized` unless the spec says otherwise. */
    unauthorizedMessage?: string;
  }
}

/** The `detail` of a 401: what was wrong with the credentials and what to send instead. */
const AUTH_DETAIL = {
  missing: 'Missing Authorization header: send Authorization: Bearer <key>',
  malformed: 'Malformed Authorization header: expected Bearer <key>',
  unknown: 'Unknown or revoked API key',
} as const;

type Credentials = { key: string } | { problem: 'missing' | 'malformed' };

/**
 * Reads `Authorization: Bearer <key>`, or a bare `Authorization: <key>` as the Python SDK sends it. A bare value is
 * looked up like any key, so one that is not a key gets the unknown-key detail.
 */
function credentials(header: string | undefined): Credentials {
  const value = header?.trim() ?? '';
  if (value === '') return { problem: 'missing' };
  const bearer = value.match(/^Bearer\s+(\S+)$/i);
  if (bearer) return { key: bearer[1]! };
  if (/^\S+$/.test(value) && !/^Bearer$/i.test(value)) return { key: value };
  return { problem: 'malformed' };
}

/** Requires an API key on every route registered in the given scope. */
export function requireApiKey(scope: FastifyInstance, accounts: AccountsService) {
  scope.decorateRequest('account', null as unknown as Account);
  scope.decorateRequest('apiKeyId', '');
  scope.addHook('onRequest', async (request, reply) => {
    const presented = credentials(request.headers.authorization);
    const account = 'key' in presented ? await accounts.authenticate(presented.key) : undefined;
    if (!account) {
      const detail = AUTH_DETAIL['key' in presented ? 'unknown' : presented.problem];
      reply.header('WWW-Authenticate', 'Bearer realm="Mailroom"');
      return reply.code(401).send({ error: request.routeOptions.config.unauthorizedMessage ?? 'Unauthorized', detail });
    }
    const { keyId, ...identity } = account;
    request.account = identity;
    request.apiKeyId = keyId;
  });
}
