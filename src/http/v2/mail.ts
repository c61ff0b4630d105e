import type { Readable } from 'node:stream';
import { type Static, Type } from 'typebox';
import type { ListFilter, MailService } from '../../mail/index.ts';
import { emptyQueryAsUnset } from '../empty-query.ts';
import { pagination } from '../pagination.ts';
import { ErrorBody, errorResponses, PaginationQuery } from '../schemas.ts';
import { type Api, type Tags, UncheckedBody } from '../shared/api.ts';
import { bulkIdsOf, checkReply, stateChangeOf } from '../shared/mail-input.ts';
import {
  MailDetailSchema,
  MailListSchema,
  presentMailDetail,
  presentMailItem,
  presentReadState,
  presentReplyPlaceholder,
  presentThreadMessage,
  ReadStateSchema,
  ReplyPlaceholderSchema,
  ThreadMessageSchema,
} from './presenters/mail.ts';

/**
 * `/api/v2/mail`: list and search, single read, read and archive state, threads, the raw message and original HTML,
 * reply placeholder.
 */

interface MailRouteOptions {
  tags: Tags;
  mail: MailService;
}

/** Any id, the empty one too (`/mail/`), so that one no email can have gets the spec's `Valid email ID is required`. */
const MailIdParams = Type.Object({ id: Type.String() });

const TimeRange = Type.Union(['24h', '7d', '30d', '90d'].map((range) => Type.Literal(range as '24h')));

/** The parameters that say which mail a list shows; erase by query takes the same. */
export const MailFilterParams = {
  search: Type.Optional(Type.String()),
  status: Type.Optional(Type.Union([Type.Literal('all'), Type.Literal('processed'), Type.Literal('failed')])),
  domain: Type.Optional(Type.String({ description: 'A domain name, or `all`' })),
  timeRange: Type.Optional(TimeRange),
  includeArchived: Type.Optional(Type.Boolean()),
  emailAddress: Type.Optional(Type.String({ description: "An address, or the id of one of the account's addresses" })),
  emailId: Type.Optional(Type.String()),
};
const MailFilterObject = Type.Object(MailFilterParams);

/** The list filter the parameters say. */
export function listFilterOf(params: Static<typeof MailFilterObject>): ListFilter {
  return {
    search: params.search,
    parseSuccess: params.status === 'processed' ? true : params.status === 'failed' ? false : undefined,
    domain: params.domain,
    timeRange: params.timeRange,
    archived: params.includeArchived ? 'include' : 'exclude',
    emailAddress: params.emailAddress,
    emailId: params.emailId,
  };
}

const LIST_DESCRIPTION = `Received mail, newest first. \`search\` uses the full-text index (subject, sender, recipients
and, for free words, the text body) and accepts \`from:\`, \`to:\`, \`subject:\`, \`has:attachment\`, \`is:read\`,
\`is:unread\`, \`before:YYYY-MM-DD\`, \`after:YYYY-MM-DD\`, \`"quoted phrases"\` and \`-\` to negate; unquoted words
match as prefixes. Without \`timeRange\` there is no time filter (the original defaulted to 30 days). \`emailId\`
returns every email of that email's thread, archived ones included.`;

export function listMail(app: Api, { tags, mail }: MailRouteOptions) {
  app.get(
    '/mail',
    {
      preValidation: emptyQueryAsUnset,
      config: { unauthorizedMessage: 'Invalid or missing API key', internalErrorMessage: 'Failed to fetch emails' },
      schema: {
        tags,
        summary: 'List and search received mail',
        description: LIST_DESCRIPTION,
        querystring: Type.Object({ ...PaginationQuery, ...MailFilterParams }),
        response: { 200: MailListSchema, ...errorResponses, 500: ErrorBody },
      },
    },
    async (request) => {
      const { query } = request;
      const page = pagination(query);
      const { emails, total, totalIsExact, hasMore } = await mail.list(request.account.id, listFilterOf(query), page);
      return {
        emails: emails.map(presentMailItem),
        pagination: { total, limit: page.limit, offset: page.offset, hasMore, totalIsExact },
        filters: { uniqueDomains: await mail.uniqueDomains(request.account.id) },
      };
    },
  );
}

export function replyToMail(app: Api, { tags, mail }: MailRouteOptions) {
  app.post(
    '/mail',
    {
      schema: {
        tags,
        summary: 'Reply to a received email (placeholder)',
        description: 'Validates the reply and answers `pending_implementation`. Nothing is sent.',
        body: UncheckedBody(['emailId', 'to', 'subject', 'textBody', 'htmlBody', 'attachments']),
        response: { 200: ReplyPlaceholderSchema, 415: ErrorBody, ...errorResponses },
      },
      preValidation: async (request, reply) => {
        if (!/^application\/json\b/i.test(request.headers['content-type'] ?? '')) {
          return reply.code(415).send({ error: 'Content-Type must be application/json' });
        }
      },
    },
    async (request) => {
      const find = (emailId: string) => mail.find(request.account.id, emailId, 'Original email not found');
      return presentReplyPlaceholder(await checkReply(request.body ?? {}, find));
    },
  );
}

export function bulkUpdateMail(app: Api, { tags, mail }: MailRouteOptions) {
  app.post(
    '/mail/bulk',
    {
      schema: {
        tags,
        summary: 'Mark up to 100 emails read/unread or archived/unarchived',
        body: Type.Optional(
          Type.Object({
            emailIds: Type.Optional(Type.Unknown()),
            updates: Type.Optional(
              Type.Object({ isRead: Type.Optional(Type.Unknown()), isArchived: Type.Optional(Type.Unknown()) }),
            ),
          }),
        ),
        response: {
          200: Type.Object({
            updatedCount: Type.Integer(),
            emails: Type.Array(Type.Object({ id: Type.String(), isRead: Type.Boolean(), isArchived: Type.Boolean() })),
          }),
          ...errorResponses,
        },
      },
    },
    async (request) => {
      const ids = bulkIdsOf(request.body?.emailIds);
      const states = await mail.bulkUpdate(request.account.id, ids, stateChangeOf(request.body?.updates));
      return {
        updatedCount: states.length,
        emails: states.map(({ id, isRead, isArchived }) => ({ id, isRead, isArchived })),
      };
    },
  );
}

export function readMail(app: Api, { tags, mail }: MailRouteOptions) {
  app.get(
    '/mail/:id',
    {
      schema: {
        tags,
        summary: 'Read a received email',
        description: 'Marks it read. `content.rawContent` holds the raw message up to 1 MiB; `/mail/{id}/raw` always.',
        params: MailIdParams,
        response: { 200: MailDetailSchema, ...errorResponses },
      },
    },
    async (request) => presentMailDetail(await mail.read(request.account.id, request.params.id)),
  );
}

export function updateMail(app: Api, { tags, mail }: MailRouteOptions) {
  app.patch(
    '/mail/:id',
    {
      schema: {
        tags,
        summary: 'Mark read/unread, archive/unarchive',
        params: MailIdParams,
        body: Type.Optional(
          Type.Object({ isRead: Type.Optional(Type.Unknown()), isArchived: Type.Optional(Type.Unknown()) }),
        ),
        response: { 200: ReadStateSchema, ...errorResponses },
      },
    },
    async (request) => {
      const change = stateChangeOf(request.body);
      return presentReadState(await mail.update(request.account.id, request.params.id, change));
    },
  );
}

export function mailThread(app: Api, { tags, mail }: MailRouteOptions) {
  app.get(
    '/mail/:id/thread',
    {
      schema: {
        tags,
        summary: 'The thread of an email, in order',
        params: MailIdParams,
        response: {
          200: Type.Object({
            messages: Type.Array(ThreadMessageSchema),
            totalCount: Type.Integer(),
            threadId: Type.String(),
          }),
          ...errorResponses,
        },
      },
    },
    async (request) => {
      const { threadId, messages } = await mail.thread(request.account.id, request.params.id);
      return { messages: messages.map(presentThreadMessage), totalCount: messages.length, threadId };
    },
  );
}

export function originalHtml(app: Api, { tags, mail }: MailRouteOptions) {
  app.get(
    '/mail/:id/html',
    {
      schema: {
        tags,
        summary: 'The HTML body as received, before sanitizing',
        description:
          "Mailroom's own (not Inbound's). `content.htmlBody` is sanitized, and leaves out what a page could not " +
          'embed safely, style sheets among it; this is the body as the sender wrote it (decoded to UTF-8), for a ' +
          'viewer that isolates it, such as a sandboxed frame without scripts. Never insert it into a page. ' +
          '`html` is null when the message has no HTML body.',
        params: MailIdParams,
        response: { 200: Type.Object({ html: Type.Union([Type.String(), Type.Null()]) }), ...errorResponses },
      },
    },
    async (request) => ({ html: await mail.originalHtml(request.account.id, request.params.id) }),
  );
}

export function rawMail(app: Api, { tags, mail }: MailRouteOptions) {
  app.get(
    '/mail/:id/raw',
    {
      schema: {
        tags,
        summary: 'The raw message as received (message/rfc822)',
        params: MailIdParams,
        response: {
          200: {
            description: 'The message, byte for byte',
            content: { 'message/rfc822': { schema: Type.Unsafe<Readable>({ type: 'string' }) } },
          },
          ...errorResponses,
        },
      },
    },
    async (request, reply) => {
      const { stream, size } = await mail.openRaw(request.account.id, request.params.id);
      // The sender wrote every byte of it: nosniff keeps a browser from reading it as anything but message/rfc822.
      return reply
        .type('message/rfc822')
        .header('x-content-type-options', 'nosniff')
        .header('content-length', size)
        .send(stream);
    },
  );
}
