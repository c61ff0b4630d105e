import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { requireApiKey } from '../auth.ts';
import type { HttpServices } from '../server.ts';
import { sharedRoutes } from '../shared/routes.ts';
import { readSentEmail, replyToEmail } from '../shared/sending.ts';
import { acknowledgeAlert, listAlerts, readAlert, readAlertSettings, setAlertSettings } from './alerts.ts';
import { listDeliveries, readDelivery, replayDeliveries, retryDelivery } from './deliveries.ts';
import { checkDomainVerification, startDomainVerification } from './domain-auth.ts';
import { streamEvents } from './events.ts';
import { createKey, listKeys, revokeKey } from './keys.ts';
import { bulkUpdateMail, listMail, mailThread, rawMail, readMail, replyToMail, updateMail } from './mail.ts';
import {
  eraseMail,
  listErasures,
  readAccountRetention,
  readAddressRetention,
  readDomainRetention,
  setAccountRetention,
  setAddressRetention,
  setDomainRetention,
} from './retention.ts';
import { explainRouting } from './routing-explain.ts';
import { createWebhook, deleteWebhook, listWebhooks, readWebhook, updateWebhook } from './webhooks.ts';

/**
 * The `/api/v2` family: the shared routes with PUT for catch-all and domain `meta`, then v2's own: legacy webhooks,
 * camelCase received mail, the delivery log, and the account's API keys.
 */
export const v2Routes: FastifyPluginAsyncTypebox<HttpServices> = async (api, services) => {
  const { accounts, webhooks, mail, deliveries, retention, erasures, alerts } = services;
  requireApiKey(api, accounts, services.apiRateLimit);
  sharedRoutes(api, services, { tagPrefix: 'v2', catchAllMethod: 'PUT', domainMeta: true });
  startDomainVerification(api, { tags: ['v2 domains'], domains: services.domains });
  checkDomainVerification(api, { tags: ['v2 domains'], domains: services.domains });
  listWebhooks(api, { tags: ['v2 webhooks'], webhooks });
  createWebhook(api, { tags: ['v2 webhooks'], webhooks });
  readWebhook(api, { tags: ['v2 webhooks'], webhooks });
  updateWebhook(api, { tags: ['v2 webhooks'], webhooks });
  deleteWebhook(api, { tags: ['v2 webhooks'], webhooks });
  listMail(api, { tags: ['v2 mail'], mail });
  eraseMail(api, { tags: ['v2 mail'], erasures });
  listErasures(api, { tags: ['v2 mail'], erasures });
  replyToMail(api, { tags: ['v2 mail'], mail });
  bulkUpdateMail(api, { tags: ['v2 mail'], mail });
  readMail(api, { tags: ['v2 mail'], mail });
  updateMail(api, { tags: ['v2 mail'], mail });
  mailThread(api, { tags: ['v2 mail'], mail });
  rawMail(api, { tags: ['v2 mail'], mail });
  readSentEmail(api, { tags: ['v2 emails'] });
  replyToEmail(api, { tags: ['v2 emails'] });
  retryDelivery(api, { tags: ['v2 deliveries'], deliveries });
  listDeliveries(api, { tags: ['v2 deliveries'], deliveries });
  readDelivery(api, { tags: ['v2 deliveries'], deliveries });
  replayDeliveries(api, { tags: ['v2 deliveries'], deliveries });
  explainRouting(api, { tags: ['v2 routing'], explainRouting: services.explainRouting });
  listKeys(api, { tags: ['v2 keys'], accounts });
  createKey(api, { tags: ['v2 keys'], accounts });
  revokeKey(api, { tags: ['v2 keys'], accounts });
  readAccountRetention(api, { tags: ['v2 retention'], retention });
  setAccountRetention(api, { tags: ['v2 retention'], retention });
  readDomainRetention(api, { tags: ['v2 retention'], retention });
  setDomainRetention(api, { tags: ['v2 retention'], retention });
  readAddressRetention(api, { tags: ['v2 retention'], retention });
  setAddressRetention(api, { tags: ['v2 retention'], retention });
  listAlerts(api, { tags: ['v2 alerts'], alerts });
  readAlertSettings(api, { tags: ['v2 alerts'], alerts });
  setAlertSettings(api, { tags: ['v2 alerts'], alerts });
  readAlert(api, { tags: ['v2 alerts'], alerts });
  acknowledgeAlert(api, { tags: ['v2 alerts'], alerts });
  streamEvents(api, { tags: ['v2 events'], events: services.events });
};
