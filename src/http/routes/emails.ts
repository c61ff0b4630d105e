import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { NotSupported } from '../../core/index.ts';
import type { MailFilter, MailService } from '../../mail/index.ts';
import { pagination } from '../pagination.ts';
import {
  E2EmailItemSchema,
  E2EmailSchema,
  E2ReplyPlaceholderSchema,
  presentE2Email,
  presentE2EmailItem,
  presentE2ReplyPlaceholder,
} from '../presenters/emails.ts';
import { ErrorBody, errorResponses, IdParams, PaginationQuery } from '../schemas.ts';

export interface EmailRoutesOptions {
  family: 'e2' | 'v2';
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

function receivedFilter(status: (typeof STATUSES)[number] | undefined): MailFilter | undefined {
  if (status && SENT_ONLY_STATUSES.has(status)) return undefined;
  if (status === 'delivered') return { parseSuccess: true };
  if (status === 'failed') return { parseSuccess: false };
  if (status === 'read') return { isRead: true };
  if (status === 'unread') return { isRead: false };
  if (status === 'archived') return { archived: 'only' };
  return {};
}

const SENDING_NOT_SUPPORTED = 'Sending is not supported by Mailroom';

/**
 * e2 `/emails`: received mail (Mailroom keeps no sent mail, so `type=sent|scheduled` lists nothing) and the reply
 * placeholder. Sending and scheduling answer 501 in both families rather than pretending.
 */
export const emailRoutes: FastifyPluginAsyncTypebox<EmailRoutesOptions> = async (app, { family, mail }) => {
  const tags = [`${family} emails`];
  const notSupported = async () => {
    throw new NotSupported(SENDING_NOT_SUPPORTED);
  };
  const sendingSchema = (summary: string) => ({
    schema: { tags, summary, description: 'Not supported: answers 501.', response: { 501: ErrorBody } },
  });
  app.post('/emails', sendingSchema('Send an email'), notSupported);
  app.post('/emails/batch', sendingSchema('Send a batch of emails'), notSupported);
  app.post('/emails/schedule', sendingSchema('Schedule an email'), notSupported);
  app.get('/emails/schedule', sendingSchema('List scheduled emails'), notSupported);
  app.get('/emails/schedule/:id', sendingSchema('Read a scheduled email'), notSupported);
  app.delete('/emails/schedule/:id', sendingSchema('Cancel a scheduled email'), notSupported);
  if (family !== 'e2') return;

  app.get(
    '/emails',
    {
      schema: {
        tags,
        summary: 'List received mail',
        description:
          'Newest first; archived mail only with `status=archived`. `search` works as on `/api/v2/mail`. ' +
          'Without `time_range` (or with `all`) there is no time filter.',
        querystring: Type.Object({
          ...PaginationQuery,
          type: Type.Optional(literals(TYPES)),
          status: Type.Optional(literals(STATUSES)),
          time_range: Type.Optional(literals(TIME_RANGES)),
          search: Type.Optional(Type.String()),
          domain: Type.Optional(Type.String({ description: 'A domain name or id' })),
          address: Type.Optional(Type.String({ description: 'An email address' })),
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

  app.post(
    '/emails/:id/reply',
    {
      schema: {
        tags,
        summary: 'Reply to a received email or thread (placeholder)',
        description: 'Validates the reply and answers `pending_implementation`. Nothing is sent.',
        params: IdParams,
        body: Type.Optional(
          Type.Object({
            from: Type.Optional(Type.Unknown()),
            to: Type.Optional(Type.Unknown()),
            subject: Type.Optional(Type.Unknown()),
            html: Type.Optional(Type.Unknown()),
            text: Type.Optional(Type.Unknown()),
            attachments: Type.Optional(Type.Unknown()),
          }),
        ),
        response: { 200: E2ReplyPlaceholderSchema, ...errorResponses },
      },
    },
    async (request) =>
      presentE2ReplyPlaceholder(await mail.validateE2Reply(request.account.id, request.params.id, request.body ?? {})),
  );
};
