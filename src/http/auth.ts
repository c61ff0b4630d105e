import type { FastifyInstance } from 'fastify';
import type { Account, AccountsService } from '../accounts/index.ts';
import type { FixedWindowRateLimiter } from '../core/index.ts';

/** Requests per API key (API_RATE_LIMIT_PER_MINUTE), counted once the key is known. */
export type ApiRateLimit = Pick<FixedWindowRateLimiter, 'hit' | 'limit'>;

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

/** Requires an API key on every route registered in the given scope, and keeps each key within `rateLimit`. */
export function requireApiKey(scope: FastifyInstance, accounts: AccountsService, rateLimit?: ApiRateLimit) {
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
    const answer = rateLimit?.hit(keyId);
    if (answer && !answer.allowed) {
      reply.header('Retry-After', String(answer.retryAfterSeconds));
      return reply.code(429).send({
        error: 'Rate limit exceeded',
        detail: `At most ${rateLimit!.limit} requests per minute per API key; retry in ${answer.retryAfterSeconds} seconds`,
      });
    }
    request.account = identity;
    request.apiKeyId = keyId;
  });
}
