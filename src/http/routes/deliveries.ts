import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { Invalid } from '../../core/index.ts';
import type { DeliveryService } from '../../delivery/index.ts';
import { emptyBodyAsObject } from '../empty-body.ts';
import { pageInfo, pagination } from '../pagination.ts';
import {
  DeliveryDetailSchema,
  DeliverySchema,
  E2RetrySchema,
  EndpointTestSchema,
  presentDelivery,
  presentDeliveryDetail,
  presentE2Retry,
  presentEndpointTest,
  presentV2Retry,
  ReplaySchema,
  V2RetrySchema,
} from '../presenters/deliveries.ts';
import { errorResponses, IdParams, Pagination, PaginationQuery } from '../schemas.ts';

export interface DeliveryRoutesOptions {
  family: 'e2' | 'v2';
  deliveries: DeliveryService;
}

const BodyTypes = ['application/json', 'application/x-www-form-urlencoded', 'multipart/form-data'];

/**
 * Delivery operations: manual retry of an email's deliveries, endpoint tests, and (v2) the delivery log and bulk
 * replay by query.
 */
export const deliveryRoutes: FastifyPluginAsyncTypebox<DeliveryRoutesOptions> = async (app, { family, deliveries }) => {
  const tags = [`${family} deliveries`];

  app.post(
    '/endpoints/:id/test',
    {
      preValidation: emptyBodyAsObject,
      schema: {
        tags,
        summary: 'Send a test email.received to an endpoint',
        description:
          'Sends a synthetic `email.received`, built exactly like a real one, to a webhook endpoint (or a test ' +
          'forward for email endpoints) and reports the answer. The body may be empty.',
        consumes: BodyTypes,
        params: IdParams,
        body: Type.Object({
          webhookFormat: Type.Optional(
            Type.Union([Type.Literal('inbound'), Type.Literal('discord'), Type.Literal('slack')], {
              description: 'accepted for compatibility; Mailroom always sends the inbound format',
            }),
          ),
          overrideUrl: Type.Optional(Type.String({ description: 'send to this URL instead of the configured one' })),
        }),
        response: { 200: EndpointTestSchema, ...errorResponses },
      },
    },
    async (request) => {
      const result = await deliveries.testEndpoint(request.account.id, request.params.id, {
        overrideUrl: request.body.overrideUrl,
      });
      return presentEndpointTest(result);
    },
  );

  if (family === 'e2') {
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
          response: { 200: E2RetrySchema, ...errorResponses },
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
    return;
  }

  app.post(
    '/emails/:id/retry-delivery',
    {
      preValidation: emptyBodyAsObject,
      schema: {
        tags,
        summary: 'Retry one delivery of a received email',
        consumes: BodyTypes,
        params: IdParams,
        body: Type.Object({ deliveryId: Type.Optional(Type.String()) }),
        response: { 200: V2RetrySchema, ...errorResponses },
      },
    },
    async (request) => {
      if (!request.body.deliveryId) throw new Invalid('deliveryId is required');
      const ids = await deliveries.retryEmail(request.account.id, request.params.id, {
        deliveryId: request.body.deliveryId,
      });
      return presentV2Retry(ids);
    },
  );

  app.get(
    '/deliveries',
    {
      schema: {
        tags,
        summary: 'List deliveries (the delivery log)',
        querystring: Type.Object({
          ...PaginationQuery,
          endpointId: Type.Optional(Type.String()),
          emailId: Type.Optional(Type.String()),
          status: Type.Optional(
            Type.Union([
              Type.Literal('pending'),
              Type.Literal('processing'),
              Type.Literal('success'),
              Type.Literal('failed'),
            ]),
          ),
        }),
        response: { 200: Type.Object({ data: Type.Array(DeliverySchema), pagination: Pagination }), ...errorResponses },
      },
    },
    async (request) => {
      const page = pagination(request.query);
      const { deliveries: rows, total } = await deliveries.listDeliveries(request.account.id, {
        ...page,
        endpointId: request.query.endpointId,
        emailId: request.query.emailId,
        status: request.query.status,
      });
      return { data: rows.map(presentDelivery), pagination: pageInfo(page, total, rows.length) };
    },
  );

  app.get(
    '/deliveries/:id',
    {
      schema: {
        tags,
        summary: 'Read one delivery with every attempt',
        params: IdParams,
        response: { 200: DeliveryDetailSchema, ...errorResponses },
      },
    },
    async (request) => presentDeliveryDetail(await deliveries.getDelivery(request.account.id, request.params.id)),
  );

  app.post(
    '/deliveries/replay',
    {
      preValidation: emptyBodyAsObject,
      schema: {
        tags,
        summary: 'Replay failed deliveries by query',
        description:
          'Queues again every failed delivery of the account that matches: one endpoint or legacy webhook ' +
          '(`endpointId`), created at or after `since` and before `until` (ISO 8601). Each gets a fresh retry budget.',
        consumes: BodyTypes,
        body: Type.Object({
          endpointId: Type.Optional(Type.String()),
          status: Type.Optional(Type.Literal('failed')),
          since: Type.Optional(Type.String()),
          until: Type.Optional(Type.String()),
        }),
        response: { 200: ReplaySchema, ...errorResponses },
      },
    },
    async (request) => deliveries.replay(request.account.id, request.body),
  );
};
