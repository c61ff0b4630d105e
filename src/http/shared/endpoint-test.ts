import { Type } from 'typebox';
import type { DeliveryService } from '../../delivery/index.ts';
import type { EndpointsService } from '../../endpoints/index.ts';
import { emptyBodyAsObject } from '../empty-body.ts';
import { errorResponses, IdParams } from '../schemas.ts';
import { type Api, BodyTypes, type Tags } from './api.ts';
import { EndpointTestSchema, presentEndpointTest } from './presenters/deliveries.ts';

export function testEndpoint(
  app: Api,
  { tags, deliveries, endpoints }: { tags: Tags; deliveries: DeliveryService; endpoints: EndpointsService },
) {
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
          overrideUrl: Type.Optional(
            Type.String({ description: 'send to this URL instead of the configured one; held to the same rules' }),
          ),
        }),
        response: { 200: EndpointTestSchema, ...errorResponses },
      },
    },
    async (request) => {
      if (request.body.overrideUrl !== undefined) await endpoints.assertWebhookUrl(request.body.overrideUrl);
      const result = await deliveries.testEndpoint(request.account.id, request.params.id, {
        overrideUrl: request.body.overrideUrl,
      });
      return presentEndpointTest(result);
    },
  );
}
