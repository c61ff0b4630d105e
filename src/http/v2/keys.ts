import { Type } from 'typebox';
import { type AccountsService, MAX_ACTIVE_KEYS_PER_ACCOUNT } from '../../accounts/index.ts';
import { ErrorBody, errorResponses, IdParams } from '../schemas.ts';
import type { Api, Tags } from '../shared/api.ts';
import { ApiKeySchema, IssuedKeySchema, presentApiKey, presentIssuedKey } from './presenters/keys.ts';

/** API keys of the calling key's account: another account's keys are not found. */

interface KeyRouteOptions {
  tags: Tags;
  accounts: AccountsService;
}

export function listKeys(app: Api, { tags, accounts }: KeyRouteOptions) {
  app.get(
    '/keys',
    {
      schema: {
        tags,
        summary: "List the account's API keys",
        description: 'Revoked keys are listed too, with `revokedAt`. `lastUsedAt` is updated at most once a minute.',
        response: { 200: Type.Object({ data: Type.Array(ApiKeySchema) }), ...errorResponses },
      },
    },
    async (request) => ({ data: (await accounts.listKeys(request.account.id)).map(presentApiKey) }),
  );
}

export function createKey(app: Api, { tags, accounts }: KeyRouteOptions) {
  app.post(
    '/keys',
    {
      schema: {
        tags,
        summary: 'Create an API key for the account',
        description:
          'The answer holds the key itself in `key`; it is never shown again. An account has at most ' +
          `${MAX_ACTIVE_KEYS_PER_ACCOUNT} active keys (403 past that): revoke one to make room.`,
        response: { 201: IssuedKeySchema, 403: ErrorBody, ...errorResponses },
      },
    },
    async (request, reply) =>
      reply.code(201).send(presentIssuedKey(await accounts.issueAdditionalKey(request.account))),
  );
}

export function revokeKey(app: Api, { tags, accounts }: KeyRouteOptions) {
  app.delete(
    '/keys/:id',
    {
      schema: {
        tags,
        summary: 'Revoke an API key',
        description:
          'The key is refused from the next request on, by every Mailroom process on the database. A key may revoke ' +
          'itself. The last active key of the account cannot be revoked (409): create another first. Revoking a ' +
          'revoked key changes nothing.',
        params: IdParams,
        response: { 200: ApiKeySchema, 409: ErrorBody, ...errorResponses },
      },
    },
    async (request) => presentApiKey(await accounts.revokeKey(request.account.id, request.params.id)),
  );
}
