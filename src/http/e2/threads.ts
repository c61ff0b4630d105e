import { Type } from 'typebox';
import { Invalid } from '../../core/index.ts';
import type { ThreadsService } from '../../mail/index.ts';
import { emptyQueryAsUnset } from '../empty-query.ts';
import { errorResponses, IdParams } from '../schemas.ts';
import type { Api, Tags } from '../shared/api.ts';
import { presentThreadDetail, presentThreadItem, ThreadDetailSchema, ThreadItemSchema } from './presenters/threads.ts';

/** e2 `/mail/threads`: conversations, newest activity first, with cursor pagination. */

interface ThreadRouteOptions {
  tags: Tags;
  threads: ThreadsService;
}

export function listThreads(app: Api, { tags, threads }: ThreadRouteOptions) {
  app.get(
    '/mail/threads',
    {
      preValidation: emptyQueryAsUnset,
      schema: {
        tags,
        summary: 'List threads',
        description:
          'Pass `pagination.next_cursor` (an opaque string) as `cursor` for the next page; it starts after where ' +
          'the previous page ended, whatever arrived meanwhile. `search` works as on the mail list.',
        querystring: Type.Object({
          limit: Type.Optional(Type.Integer({ description: '1 to 100, default 25' })),
          cursor: Type.Optional(Type.String()),
          search: Type.Optional(Type.String()),
          // A string, as Inbound and its client type it: `true` filters, any other value lists every thread.
          unread: Type.Optional(Type.String({ description: '`true`: only threads with unread mail' })),
          domain: Type.Optional(Type.String({ description: 'A domain name or id' })),
          address: Type.Optional(Type.String({ description: 'An email address or address id' })),
        }),
        response: {
          200: Type.Object({
            threads: Type.Array(ThreadItemSchema),
            pagination: Type.Object({
              limit: Type.Integer(),
              has_more: Type.Boolean(),
              next_cursor: Type.Union([Type.String(), Type.Null()]),
            }),
            filters: Type.Object({
              search: Type.Optional(Type.String()),
              domain: Type.Optional(Type.String()),
              address: Type.Optional(Type.String()),
              unread_only: Type.Optional(Type.Boolean()),
            }),
          }),
          ...errorResponses,
        },
      },
    },
    async (request) => {
      const { query } = request;
      const limit = query.limit ?? 25;
      if (limit < 1 || limit > 100) throw new Invalid('Limit must be between 1 and 100');
      const unreadOnly = query.unread === 'true';
      const page = await threads.list(request.account.id, {
        limit,
        cursor: query.cursor,
        search: query.search,
        unreadOnly,
        domain: query.domain,
        address: query.address,
      });
      return {
        threads: page.threads.map(presentThreadItem),
        pagination: { limit, has_more: page.nextCursor !== null, next_cursor: page.nextCursor },
        filters: {
          ...(query.search === undefined ? {} : { search: query.search }),
          ...(query.domain === undefined ? {} : { domain: query.domain }),
          ...(query.address === undefined ? {} : { address: query.address }),
          ...(unreadOnly ? { unread_only: true } : {}),
        },
      };
    },
  );
}

export function readThread(app: Api, { tags, threads }: ThreadRouteOptions) {
  app.get(
    '/mail/threads/:id',
    {
      schema: {
        tags,
        summary: 'Read a thread with all its messages',
        params: IdParams,
        response: { 200: ThreadDetailSchema, ...errorResponses },
      },
    },
    async (request) => {
      const { thread, messages } = await threads.get(request.account.id, request.params.id);
      return presentThreadDetail(thread, messages);
    },
  );
}
