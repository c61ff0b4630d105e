import { Type } from 'typebox';
import { Invalid } from '../../core/index.ts';
import type { DeliveryService } from '../../delivery/index.ts';
import { emptyBodyAsObject } from '../empty-body.ts';
import { ErrorBody, errorResponses, IdParams } from '../schemas.ts';
import { type Api, BodyTypes, type Tags } from '../shared/api.ts';
import { paginatedListRoute } from '../shared/paginated-list.ts';
import {
  DeliveryDetailSchema,
  DeliverySchema,
  presentDelivery,
  presentDeliveryDetail,
  presentV2Retry,
  ReplaySchema,
  V2RetrySchema,
} from '../shared/presenters/deliveries.ts';

/** v2 delivery operations: retry of one delivery, the delivery log and bulk replay by query. */

interface DeliveryRouteOptions {
  tags: Tags;
  deliveries: DeliveryService;
}

export function retryDelivery(app: Api, { tags, deliveries }: DeliveryRouteOptions) {
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
        response: { 200: V2RetrySchema, 409: ErrorBody, ...errorResponses },
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
}

export function resendEmail(app: Api, { tags, deliveries }: DeliveryRouteOptions) {
  app.post(
    '/emails/:id/resend',
    {
      preValidation: emptyBodyAsObject,
      schema: {
        tags,
        summary: 'Deliver a received email to an endpoint again, even if its delivery succeeded',
        description:
          "Queues the email's delivery to the endpoint again with a fresh retry budget, whatever became of it (or a " +
          'new one if the email never went there): what "Delivery already succeeded. Use resend to deliver again." ' +
          'refers to. It keeps its `webhook-id`: a receiver that dedupes by it must forget that id to take it again.',
        consumes: BodyTypes,
        params: IdParams,
        body: Type.Object({ endpointId: Type.Optional(Type.String()) }),
        response: { 200: V2RetrySchema, ...errorResponses },
      },
    },
    async (request) => {
      if (!request.body.endpointId) throw new Invalid('endpointId is required');
      const id = await deliveries.resendEmail(request.account.id, request.params.id, request.body.endpointId);
      return { success: true, message: 'Email queued for delivery', deliveryId: id };
    },
  );
}

export function listDeliveries(app: Api, { tags, deliveries }: DeliveryRouteOptions) {
  paginatedListRoute(app, {
    path: '/deliveries',
    tags,
    summary: 'List deliveries (the delivery log)',
    filters: {
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
    },
    key: 'data',
    item: DeliverySchema,
    list: (accountId, page, { endpointId, emailId, status }) =>
      deliveries.listDeliveries(accountId, { ...page, endpointId, emailId, status }),
    present: presentDelivery,
  });
}

export function readDelivery(app: Api, { tags, deliveries }: DeliveryRouteOptions) {
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
}

export function replayDeliveries(app: Api, { tags, deliveries }: DeliveryRouteOptions) {
  app.post(
    '/deliveries/replay',
    {
      preValidation: emptyBodyAsObject,
      schema: {
        tags,
        summary: 'Replay failed deliveries by query',
        description:
          'Queues again every failed delivery of the account that matches: one endpoint or legacy webhook ' +
          '(`endpointId`), created at or after `since` and before `until` (ISO 8601). Each gets a fresh retry budget. ' +
          'A property not listed here is refused with 400.',
        consumes: BodyTypes,
        // A misspelt `endpointId` would otherwise be left out, and every failed delivery of the account replayed.
        body: Type.Object(
          {
            endpointId: Type.Optional(Type.String()),
            status: Type.Optional(Type.Literal('failed')),
            since: Type.Optional(Type.String()),
            until: Type.Optional(Type.String()),
          },
          { additionalProperties: false },
        ),
        response: { 200: ReplaySchema, ...errorResponses },
      },
    },
    async (request) => deliveries.replay(request.account.id, request.body),
  );
}
