import { Type } from 'typebox';
import type { ErasureService, RetentionService } from '../../retention/index.ts';
import { ErrorBody, errorResponses, IdParams } from '../schemas.ts';
import type { Api, Tags } from '../shared/api.ts';
import { paginatedListRoute } from '../shared/paginated-list.ts';
import { listFilterOf, MailFilterParams } from './mail.ts';
import {
  AccountRetentionSchema,
  EraseResultSchema,
  ErasureSchema,
  presentAccountRetention,
  presentEraseResult,
  presentErasure,
  presentScopedRetention,
  ScopedRetentionSchema,
} from './presenters/retention.ts';

/**
 * Retention: the account's period at `/retention`, a domain's and an address's period and legal hold at
 * `/domains/{id}/retention` and `/email-addresses/{id}/retention` (routes of their own, so the Inbound-shaped domain
 * and address bodies stay as they are); erase by query at `/mail/erase` and its audit records at `/mail/erasures`.
 */

interface RetentionRouteOptions {
  tags: Tags;
  retention: RetentionService;
}

interface ErasureRouteOptions {
  tags: Tags;
  erasures: ErasureService;
}

/** A whole number of days, or null; one multi-type schema so that coercion does not turn null into 0. */
const RetentionDaysInput = Type.Unsafe<number | null>({
  type: ['integer', 'null'],
  description: 'Days mail is kept, 1 to 36500; null: no period of its own',
});

const RETENTION_RULES =
  'The most specific period set applies to an email: its address, else its domain, else the account; none set keeps ' +
  'it forever. A legal hold on the address or its domain keeps the mail whatever the periods say. Each process ' +
  'deletes expired mail every RETENTION_SWEEP_SECONDS, with its search entries, deliveries and raw message.';

export function readAccountRetention(app: Api, { tags, retention }: RetentionRouteOptions) {
  app.get(
    '/retention',
    {
      schema: {
        tags,
        summary: "The account's retention period",
        description: RETENTION_RULES,
        response: { 200: AccountRetentionSchema, ...errorResponses },
      },
    },
    async (request) => presentAccountRetention(await retention.account(request.account.id)),
  );
}

export function setAccountRetention(app: Api, { tags, retention }: RetentionRouteOptions) {
  app.put(
    '/retention',
    {
      schema: {
        tags,
        summary: "Set the account's retention period",
        description: RETENTION_RULES,
        body: Type.Object({ retentionDays: RetentionDaysInput }),
        response: { 200: AccountRetentionSchema, ...errorResponses },
      },
    },
    async (request) =>
      presentAccountRetention(await retention.setAccount(request.account.id, request.body.retentionDays)),
  );
}

const ScopedRetentionInput = Type.Object({
  retentionDays: Type.Optional(RetentionDaysInput),
  legalHold: Type.Optional(Type.Boolean()),
});

export function readDomainRetention(app: Api, { tags, retention }: RetentionRouteOptions) {
  app.get(
    '/domains/:id/retention',
    {
      schema: {
        tags,
        summary: "A domain's retention period and legal hold",
        description: RETENTION_RULES,
        params: IdParams,
        response: { 200: ScopedRetentionSchema, ...errorResponses },
      },
    },
    async (request) => presentScopedRetention(await retention.domain(request.account.id, request.params.id)),
  );
}

export function setDomainRetention(app: Api, { tags, retention }: RetentionRouteOptions) {
  app.put(
    '/domains/:id/retention',
    {
      schema: {
        tags,
        summary: "Set a domain's retention period or legal hold",
        description: `${RETENTION_RULES} A field left out stays as it is.`,
        params: IdParams,
        body: ScopedRetentionInput,
        response: { 200: ScopedRetentionSchema, ...errorResponses },
      },
    },
    async (request) =>
      presentScopedRetention(await retention.setDomain(request.account.id, request.params.id, request.body)),
  );
}

export function readAddressRetention(app: Api, { tags, retention }: RetentionRouteOptions) {
  app.get(
    '/email-addresses/:id/retention',
    {
      schema: {
        tags,
        summary: "An address's retention period and legal hold",
        description: RETENTION_RULES,
        params: IdParams,
        response: { 200: ScopedRetentionSchema, ...errorResponses },
      },
    },
    async (request) => presentScopedRetention(await retention.address(request.account.id, request.params.id)),
  );
}

export function setAddressRetention(app: Api, { tags, retention }: RetentionRouteOptions) {
  app.put(
    '/email-addresses/:id/retention',
    {
      schema: {
        tags,
        summary: "Set an address's retention period or legal hold",
        description: `${RETENTION_RULES} A field left out stays as it is.`,
        params: IdParams,
        body: ScopedRetentionInput,
        response: { 200: ScopedRetentionSchema, ...errorResponses },
      },
    },
    async (request) =>
      presentScopedRetention(await retention.setAddress(request.account.id, request.params.id, request.body)),
  );
}

export function eraseMail(app: Api, { tags, erasures }: ErasureRouteOptions) {
  app.post(
    '/mail/erase',
    {
      schema: {
        tags,
        summary: 'Erase the mail a list filter matches (dry run first)',
        description:
          'Takes the parameters of `GET /mail` (archived mail only with `includeArchived`). `dryRun: true` answers ' +
          'how many emails match. Without it the emails are erased with their search entries, deliveries and raw ' +
          'messages, but only if `expectedCount` equals the number that match then (409 with the `count` ' +
          'otherwise), and an audit record (`GET /mail/erasures`) keeps who erased how many, with which filter. ' +
          'A property not listed here, and a blank `search` or `domain`, is refused with 400.',
        // A misspelt filter would otherwise be left out and widen the erase, up to the whole mailbox.
        body: Type.Object(
          {
            ...MailFilterParams,
            // A blank domain or search (a script's unset variable) would match every email: the dry run would count
            // the whole mailbox too, and its count would let the erase through.
            search: Type.Optional(Type.String({ minLength: 1, pattern: '\\S' })),
            domain: Type.Optional(
              Type.String({ minLength: 1, pattern: '\\S', description: 'A domain name, or `all`' }),
            ),
            dryRun: Type.Optional(Type.Boolean()),
            expectedCount: Type.Optional(Type.Integer({ minimum: 0 })),
          },
          { additionalProperties: false },
        ),
        response: { 200: EraseResultSchema, 409: ErrorBody, ...errorResponses },
      },
    },
    async (request) => {
      const { dryRun, expectedCount, ...given } = request.body;
      const result = await erasures.erase(request.account.id, request.apiKeyId, {
        given,
        filter: listFilterOf(given),
        dryRun: dryRun === true,
        expectedCount,
      });
      return presentEraseResult(result);
    },
  );
}

export function listErasures(app: Api, { tags, erasures }: ErasureRouteOptions) {
  paginatedListRoute(app, {
    path: '/mail/erasures',
    tags,
    summary: 'The audit records of erase by query, newest first',
    key: 'erasures',
    item: ErasureSchema,
    list: (accountId, page) => erasures.list(accountId, page),
    present: presentErasure,
  });
}
