import { Type } from 'typebox';
import { Invalid } from '../../core/index.ts';
import type { DeliveryService } from '../../delivery/index.ts';
import type { MailFilter, MailService } from '../../mail/index.ts';
import { emptyBodyAsObject } from '../empty-body.ts';
import { emptyQueryAsUnset } from '../empty-query.ts';
import { pagination } from '../pagination.ts';
import { ErrorBody, errorResponses, IdParams, PaginationQuery } from '../schemas.ts';
import { type Api, BodyTypes, type Tags } from '../shared/api.ts';
import { E2RetrySchema, presentE2Retry } from '../shared/presenters/deliveries.ts';
import { E2EmailItemSchema, E2EmailSchema, presentE2Email, presentE2EmailItem } from './presenters/emails.ts';

/**
 * e2 `/emails`: received mail (Mailroom keeps no sent mail, so `type=sent|scheduled` lists nothing) and delivery
 * retry; replying is sending (src/http/shared/sending.ts).
 */

interface EmailRouteOptions {
  tags: Tags;
  mail: MailService;
}

const literals = <T extends string>(values: readonly T[]) => Type.Union(values.map((value) => Type.Literal(value)));

const TYPES = ['all', 'sent', 'received', 'scheduled'] as const;
const STATUSES = [
  'all',
  'delivered',
  'pending',
  'failed',
  'bounced',
  'scheduled',
  'cancelled',
  'unread',
  'read',
  'archived',
] as const;
const TIME_RANGES = ['1h', '24h', '7d', '30d', '90d', 'all'] as const;

/** Statuses a received email can never have (they belong to sent mail, which Mailroom does not keep). */
const SENT_ONLY_STATUSES = new Set(['pending', 'bounced', 'scheduled', 'cancelled']);

/** As Inbound's e2 list: archived mail is listed too (flagged `is_archived`), except when asking for unread mail. */
function receivedFilter(status: (typeof STATUSES)[number] | undefined): MailFilter | undefined {
  if (status && SENT_ONLY_STATUSES.has(status)) return undefined;
  if (status === 'unread') return { isRead: false };
  if (status === 'archived') return { archived: 'only' };
  if (status === 'delivered') return { parseSuccess: true, archived: 'include' };
  if (status === 'failed') return { parseSuccess: false, archived: 'include' };
  if (status === 'read') return { isRead: true, archived: 'include' };
  return { archived: 'include' };
}

export function listEmails(app: Api, { tags, mail }: EmailRouteOptions) {
  app.get(
    '/emails',
    {
      preValidation: emptyQueryAsUnset,
      schema: {
        tags,
        summary: 'List received mail',
        description:
          'Newest first; archived mail is listed (`is_archived`) except with `status=unread`, and alone with ' +
          '`status=archived`. `search` works as on `/api/v2/mail`. ' +
          'Without `time_range` (or with `all`) there is no time filter.',
        querystring: Type.Object({
          ...PaginationQuery,
          type: Type.Optional(literals(TYPES)),
          status: Type.Optional(literals(STATUSES)),
          time_range: Type.Optional(literals(TIME_RANGES)),
          search: Type.Optional(Type.String()),
          domain: Type.Optional(Type.String({ description: 'A domain name or id' })),
          address: Type.Optional(Type.String({ description: 'An email address or address id' })),
        }),
        response: {
          200: Type.Object({
            data: Type.Array(E2EmailItemSchema),
            pagination: Type.Object({
              limit: Type.Integer(),
              offset: Type.Integer(),
              total: Type.Integer(),
              has_more: Type.Boolean(),
              total_is_exact: Type.Boolean({ description: 'False when a search matched more than 1,000 emails' }),
            }),
            filters: Type.Object({
              type: Type.String(),
              status: Type.String(),
              time_range: Type.String(),
              search: Type.Optional(Type.String()),
              domain: Type.Optional(Type.String()),
              address: Type.Optional(Type.String()),
            }),
          }),
          ...errorResponses,
        },
      },
    },
    async (request) => {
      const { query } = request;
      const page = pagination(query);
      const statusFilter = receivedFilter(query.status);
      const wantsReceived = query.type === undefined || query.type === 'all' || query.type === 'received';
      const timeRange = query.time_range === 'all' ? undefined : query.time_range;
      const { emails, total, totalIsExact, hasMore } =
        wantsReceived && statusFilter
          ? await mail.list(
              request.account.id,
              {
                ...statusFilter,
                search: query.search,
                domain: query.domain,
                emailAddress: query.address,
                timeRange,
              },
              page,
            )
          : { emails: [], total: 0, totalIsExact: true, hasMore: false };
      return {
        data: emails.map(presentE2EmailItem),
        pagination: {
          limit: page.limit,
          offset: page.offset,
          total,
          has_more: hasMore,
          total_is_exact: totalIsExact,
        },
        filters: {
          type: query.type ?? 'all',
          status: query.status ?? 'all',
          time_range: query.time_range ?? 'all',
          ...(query.search === undefined ? {} : { search: query.search }),
          ...(query.domain === undefined ? {} : { domain: query.domain }),
          ...(query.address === undefined ? {} : { address: query.address }),
        },
      };
    },
  );
}

export function readEmail(app: Api, { tags, mail }: EmailRouteOptions) {
  app.get(
    '/emails/:id',
    {
      schema: {
        tags,
        summary: 'Read a received email',
        description: 'Marks it read, as the v2 single read does.',
        params: IdParams,
        response: { 200: E2EmailSchema, ...errorResponses },
      },
    },
    async (request) => presentE2Email((await mail.read(request.account.id, request.params.id)).email),
  );
}

/** Marks a received email read/unread and archived/unarchived; answers the email after the change. */
export function updateEmail(app: Api, { tags, mail }: EmailRouteOptions) {
  app.patch(
    '/emails/:id',
    {
      preValidation: emptyBodyAsObject,
      schema: {
        tags,
        summary: 'Mark a received email read/unread, archived/unarchived',
        description: 'At least one of `is_read` and `is_archived`. Answers the email as `GET /emails/{id}` does.',
        consumes: BodyTypes,
        params: IdParams,
        body: Type.Object({
          is_read: Type.Optional(Type.Boolean()),
          is_archived: Type.Optional(Type.Boolean()),
        }),
        response: { 200: E2EmailSchema, ...errorResponses },
      },
    },
    async (request) => {
      const { is_read: isRead, is_archived: isArchived } = request.body;
      if (isRead === undefined && isArchived === undefined) {
        throw new Invalid('At least one of is_read or is_archived must be provided');
      }
      const { id } = request.params;
      await mail.update(request.account.id, id, { isRead, isArchived });
      return presentE2Email(await mail.findReadable(request.account.id, id));
    },
  );
}

/** Queues a received email's deliveries again (e2's `/emails/{id}/retry`). */
export function retryEmail(app: Api, { tags, deliveries }: { tags: Tags; deliveries: DeliveryService }) {
  app.post(
    '/emails/:id/retry',
    {
      preValidation: emptyBodyAsObject,
      schema: {
        tags,
        summary: 'Retry delivery of a received email',
        description:
          'Queues one delivery (`delivery_id`), the delivery to one endpoint (`endpoint_id`; created if the email ' +
          'never went there) or every unsuccessful delivery of the email. Each gets a fresh retry budget.',
        consumes: BodyTypes,
        params: IdParams,
        body: Type.Object({
          endpoint_id: Type.Optional(Type.String()),
          delivery_id: Type.Optional(Type.String()),
        }),
        response: { 200: E2RetrySchema, 409: ErrorBody, ...errorResponses },
      },
    },
    async (request) => {
      const ids = await deliveries.retryEmail(request.account.id, request.params.id, {
        endpointId: request.body.endpoint_id || undefined,
        deliveryId: request.body.delivery_id || undefined,
      });
      return presentE2Retry(ids);
    },
  );
}
