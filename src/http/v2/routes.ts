import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { requireApiKey } from '../auth.ts';
import type { HttpServices } from '../server.ts';
import { sharedRoutes } from '../shared/routes.ts';
import { listDeliveries, readDelivery, replayDeliveries, retryDelivery } from './deliveries.ts';
import { streamEvents } from './events.ts';
import { bulkUpdateMail, listMail, mailThread, rawMail, readMail, replyToMail, updateMail } from './mail.ts';
import { explainRouting } from './routing-explain.ts';
import { createWebhook, deleteWebhook, listWebhooks, readWebhook, updateWebhook } from './webhooks.ts';

/**
 * The `/api/v2` family: the shared routes with PUT for catch-all and domain `meta`, then v2's own: legacy webhooks,
 * camelCase received mail, and the delivery log.
 */
export const v2Routes: FastifyPluginAsyncTypebox<HttpServices> = async (api, services) => {
  const { accounts, webhooks, mail, deliveries } = services;
  requireApiKey(api, accounts);
  sharedRoutes(api, services, { tagPrefix: 'v2', catchAllMethod: 'PUT', domainMeta: true });
  listWebhooks(api, { tags: ['v2 webhooks'], webhooks });
  createWebhook(api, { tags: ['v2 webhooks'], webhooks });
  readWebhook(api, { tags: ['v2 webhooks'], webhooks });
  updateWebhook(api, { tags: ['v2 webhooks'], webhooks });
  deleteWebhook(api, { tags: ['v2 webhooks'], webhooks });
  listMail(api, { tags: ['v2 mail'], mail });
  replyToMail(api, { tags: ['v2 mail'], mail });
  bulkUpdateMail(api, { tags: ['v2 mail'], mail });
  readMail(api, { tags: ['v2 mail'], mail });
  updateMail(api, { tags: ['v2 mail'], mail });
  mailThread(api, { tags: ['v2 mail'], mail });
  rawMail(api, { tags: ['v2 mail'], mail });
  retryDelivery(api, { tags: ['v2 deliveries'], deliveries });
  listDeliveries(api, { tags: ['v2 deliveries'], deliveries });
  readDelivery(api, { tags: ['v2 deliveries'], deliveries });
  replayDeliveries(api, { tags: ['v2 deliveries'], deliveries });
  explainRouting(api, { tags: ['v2 routing'], explainRouting: services.explainRouting });
  streamEvents(api, { tags: ['v2 events'], events: services.events });
};
