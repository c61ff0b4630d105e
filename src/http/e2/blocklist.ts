import { Type } from 'typebox';
import type { BlocklistService } from '../../rules/index.ts';
import { emptyBodyAsObject } from '../empty-body.ts';
import { ErrorBody, errorResponses } from '../schemas.ts';
import type { Api, Tags } from '../shared/api.ts';
import { paginatedListRoute } from '../shared/paginated-list.ts';
import { BlockedSenderSchema } from '../shared/presenters/rules.ts';

/** e2 `/blocklist`: senders whose mail is stored and flagged but not routed. */

interface BlocklistRouteOptions {
  tags: Tags;
  blocklist: BlocklistService;
}

const AddressBody = Type.Object({
  emailAddress: Type.Optional(Type.String({ description: 'An address, or `*@domain` for a whole domain' })),
});

export function listBlockedSenders(app: Api, { tags, blocklist }: BlocklistRouteOptions) {
  paginatedListRoute(app, {
    path: '/blocklist',
    tags,
    summary: 'List blocked senders',
    description: 'Newest first.',
    key: 'data',
    item: BlockedSenderSchema,
    list: (accountId, page) => blocklist.list(accountId, page),
    present: (entry) => entry,
  });
}

export function blockSender(app: Api, { tags, blocklist }: BlocklistRouteOptions) {
  app.post(
    '/blocklist',
    {
      schema: {
        tags,
        summary: 'Block a sender',
        description:
          'Mail whose envelope sender or From address matches is stored and flagged (`guard.blocked`), not routed.',
        body: AddressBody,
        response: { 201: BlockedSenderSchema, 409: ErrorBody, ...errorResponses },
      },
      preValidation: emptyBodyAsObject,
    },
    async (request, reply) =>
      reply.code(201).send(await blocklist.block(request.account.id, request.body.emailAddress)),
  );
}

export function unblockSender(app: Api, { tags, blocklist }: BlocklistRouteOptions) {
  app.post(
    '/blocklist/unblock',
    {
      schema: {
        tags,
        summary: 'Unblock a sender',
        body: AddressBody,
        response: {
          200: Type.Object({ success: Type.Literal(true), emailAddress: Type.String() }),
          ...errorResponses,
        },
      },
      preValidation: emptyBodyAsObject,
    },
    async (request) => ({
      success: true as const,
      ...(await blocklist.unblock(request.account.id, request.body.emailAddress)),
    }),
  );
}
