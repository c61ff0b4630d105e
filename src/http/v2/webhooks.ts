import { Type } from 'typebox';
import type { WebhooksService } from '../../endpoints/index.ts';
import { ClearableString, emptyBodyAsObject } from '../empty-body.ts';
import { errorResponses, IdParams } from '../schemas.ts';
import type { Api, Tags } from '../shared/api.ts';
import { paginatedListRoute } from '../shared/paginated-list.ts';
import { updateRoute } from '../shared/update-route.ts';
import { presentWebhook, presentWebhookCleanup, WebhookDeletedSchema, WebhookSchema } from './presenters/webhooks.ts';

/** Legacy webhooks: the routing target behind an address's `webhookId` (the v2 family only). */

interface WebhookRouteOptions {
  tags: Tags;
  webhooks: WebhooksService;
}

const webhookFields = {
  name: Type.Optional(Type.String()),
  url: Type.Optional(Type.String()),
  secret: ClearableString,
  headers: Type.Optional(Type.Unknown({ description: 'An object of string header values, or null to clear' })),
  timeout: Type.Optional(Type.Number({ description: 'Seconds, 1 to 300; default 30' })),
  retryAttempts: Type.Optional(Type.Number({ description: '0 to 10; default 3' })),
  isActive: Type.Optional(Type.Boolean()),
  description: ClearableString,
};

export function listWebhooks(app: Api, { tags, webhooks }: WebhookRouteOptions) {
  paginatedListRoute(app, {
    path: '/webhooks',
    tags,
    summary: 'List legacy webhooks',
    key: 'data',
    item: WebhookSchema,
    list: (accountId, page) => webhooks.list(accountId, page),
    present: presentWebhook,
  });
}

export function createWebhook(app: Api, { tags, webhooks }: WebhookRouteOptions) {
  app.post(
    '/webhooks',
    {
      schema: {
        tags,
        summary: 'Create a legacy webhook',
        description: 'Validated like a webhook endpoint, including the private-network guard on `url`.',
        body: Type.Object(webhookFields),
        response: { 201: WebhookSchema, ...errorResponses },
      },
      preValidation: emptyBodyAsObject,
    },
    async (request, reply) =>
      reply.code(201).send(presentWebhook(await webhooks.create(request.account.id, request.body))),
  );
}

export function readWebhook(app: Api, { tags, webhooks }: WebhookRouteOptions) {
  app.get(
    '/webhooks/:id',
    {
      schema: {
        tags,
        summary: 'Read a legacy webhook',
        params: IdParams,
        response: { 200: WebhookSchema, ...errorResponses },
      },
    },
    async (request) => presentWebhook(await webhooks.get(request.account.id, request.params.id)),
  );
}

export function updateWebhook(app: Api, { tags, webhooks }: WebhookRouteOptions) {
  updateRoute(app, {
    path: '/webhooks/:id',
    tags,
    summary: 'Update a legacy webhook',
    description:
      'Only the fields sent change; null clears `secret`, `headers` and `description`. A replaced `secret` signs ' +
      'beside the new one for 24 hours.',
    fields: webhookFields,
    item: WebhookSchema,
    update: (accountId, id, changes) => webhooks.update(accountId, id, changes),
    present: presentWebhook,
  });
}

export function deleteWebhook(app: Api, { tags, webhooks }: WebhookRouteOptions) {
  app.delete(
    '/webhooks/:id',
    {
      schema: {
        tags,
        summary: 'Delete a legacy webhook',
        description: 'Addresses routed to it become store-only; the delivery history is kept.',
        params: IdParams,
        response: { 200: WebhookDeletedSchema, ...errorResponses },
      },
    },
    async (request) => presentWebhookCleanup(await webhooks.remove(request.account.id, request.params.id)),
  );
}
