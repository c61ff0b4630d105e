import { Type } from 'typebox';
import type { EndpointsService } from '../../endpoints/index.ts';
import { ClearableString, emptyBodyAsObject } from '../empty-body.ts';
import { errorResponses, IdParams } from '../schemas.ts';
import { type Api, Flag, type Tags } from './api.ts';
import { paginatedListRoute } from './paginated-list.ts';
import {
  EndpointDeletedSchema,
  EndpointDetailSchema,
  EndpointSchema,
  presentEndpoint,
  presentEndpointCleanup,
  presentEndpointDetail,
  presentUpdatedEndpoint,
  UpdatedEndpointSchema,
} from './presenters/endpoints.ts';
import { updateRoute } from './update-route.ts';

/** Endpoint routes; both families serve the same shapes and errors. */

interface EndpointRouteOptions {
  tags: Tags;
  endpoints: EndpointsService;
}

export function listEndpoints(app: Api, { tags, endpoints }: EndpointRouteOptions) {
  paginatedListRoute(app, {
    path: '/endpoints',
    tags,
    summary: 'List endpoints',
    filters: {
      type: Type.Optional(Type.Union([Type.Literal('webhook'), Type.Literal('email'), Type.Literal('email_group')])),
      active: Type.Optional(Flag),
      sortBy: Type.Optional(Type.Union([Type.Literal('newest'), Type.Literal('oldest')])),
      search: Type.Optional(Type.String({ description: 'Part of the name, any case' })),
    },
    key: 'data',
    item: EndpointSchema,
    list: (accountId, page, { active, ...filters }) =>
      endpoints.list(accountId, { ...filters, ...page, active: active === undefined ? undefined : active === 'true' }),
    present: presentEndpoint,
  });
}

export function createEndpoint(app: Api, { tags, endpoints }: EndpointRouteOptions) {
  app.post(
    '/endpoints',
    {
      schema: {
        tags,
        summary: 'Create an endpoint',
        description:
          'A webhook endpoint gets its `config.verificationToken` here. The email type also accepts `email` for ' +
          '`forwardTo` (as `@inboundemail/sdk` sends it). Webhook URLs and forward addresses on private networks are ' +
          'refused unless ALLOW_PRIVATE_DESTINATIONS is set.',
        body: Type.Object({
          name: Type.Optional(Type.String()),
          type: Type.Optional(Type.String({ description: '`webhook`, `email` or `email_group`' })),
          config: Type.Optional(Type.Unknown()),
          description: ClearableString,
        }),
        response: { 201: EndpointSchema, ...errorResponses },
      },
      preValidation: emptyBodyAsObject,
    },
    async (request, reply) => {
      const created = await endpoints.create(request.account.id, request.body);
      return reply.code(201).send(presentEndpoint(created));
    },
  );
}

export function readEndpoint(app: Api, { tags, endpoints }: EndpointRouteOptions) {
  app.get(
    '/endpoints/:id',
    {
      schema: {
        tags,
        summary: 'Read an endpoint',
        description:
          'Adds the 10 most recent deliveries, the addresses routed to it and the catch-all domains using it.',
        params: IdParams,
        response: { 200: EndpointDetailSchema, ...errorResponses },
      },
    },
    async (request) => presentEndpointDetail(await endpoints.get(request.account.id, request.params.id)),
  );
}

export function updateEndpoint(app: Api, { tags, endpoints }: EndpointRouteOptions) {
  updateRoute(app, {
    path: '/endpoints/:id',
    tags,
    summary: 'Update an endpoint',
    description:
      'Only the fields sent change. A new `config` replaces the old one whole (validated as on create); a ' +
      "webhook's verificationToken is kept, and a replaced `secret` signs beside the new one for 24 hours. " +
      '`webhookFormat` is accepted and ignored: deliveries use one format.',
    fields: {
      name: Type.Optional(Type.String()),
      description: ClearableString,
      isActive: Type.Optional(Type.Boolean()),
      config: Type.Optional(Type.Unknown()),
      webhookFormat: Type.Optional(
        Type.Union([Type.Literal('inbound'), Type.Literal('discord'), Type.Literal('slack')]),
      ),
    },
    item: UpdatedEndpointSchema,
    update: (accountId, id, { webhookFormat: _ignored, ...changes }) => endpoints.update(accountId, id, changes),
    present: presentUpdatedEndpoint,
  });
}

export function deleteEndpoint(app: Api, { tags, endpoints }: EndpointRouteOptions) {
  app.delete(
    '/endpoints/:id',
    {
      schema: {
        tags,
        summary: 'Delete an endpoint',
        description:
          'Addresses routed to it become store-only and catch-all is switched off on domains that used it. ' +
          'Unlike the original service, the delivery history is kept.',
        params: IdParams,
        response: { 200: EndpointDeletedSchema, ...errorResponses },
      },
    },
    async (request) => presentEndpointCleanup(await endpoints.remove(request.account.id, request.params.id)),
  );
}
