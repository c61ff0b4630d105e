import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { requireApiKey } from '../auth.ts';
import type { HttpServices } from '../server.ts';
import { sharedRoutes } from '../shared/routes.ts';
import { readSentEmail, replyToEmail } from '../shared/sending.ts';
import { acknowledgeAlert, listAlerts, readAlert, readAlertSettings, setAlertSettings } from './alerts.ts';
import { listDeliveries, readDelivery, replayDeliveries, resendEmail, retryDelivery } from './deliveries.ts';
import { checkDomainVerification, startDomainVerification } from './domain-auth.ts';
import { streamEvents } from './events.ts';
import { createKey, listKeys, revokeKey } from './keys.ts';
import {
  bulkUpdateMail,
  listMail,
  mailThread,
  originalHtml,
  rawMail,
  readMail,
  replyToMail,
  updateMail,
} from './mail.ts';
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
  startDomainVerification(api, { tags: ['v2 domains'], domains: services.domains }); // POST /domains/:id/auth
  checkDomainVerification(api, { tags: ['v2 domains'], domains: services.domains }); // PATCH /domains/:id/auth
  listWebhooks(api, { tags: ['v2 webhooks'], webhooks }); // GET /webhooks
  createWebhook(api, { tags: ['v2 webhooks'], webhooks }); // POST /webhooks
  readWebhook(api, { tags: ['v2 webhooks'], webhooks }); // GET /webhooks/:id
  updateWebhook(api, { tags: ['v2 webhooks'], webhooks }); // PUT /webhooks/:id
  deleteWebhook(api, { tags: ['v2 webhooks'], webhooks }); // DELETE /webhooks/:id
  listMail(api, { tags: ['v2 mail'], mail }); // GET /mail
  eraseMail(api, { tags: ['v2 mail'], erasures }); // POST /mail/erase
  listErasures(api, { tags: ['v2 mail'], erasures }); // GET /mail/erasures
  replyToMail(api, { tags: ['v2 mail'], mail }); // POST /mail
  bulkUpdateMail(api, { tags: ['v2 mail'], mail }); // POST /mail/bulk
  readMail(api, { tags: ['v2 mail'], mail }); // GET /mail/:id
  updateMail(api, { tags: ['v2 mail'], mail }); // PATCH /mail/:id
  mailThread(api, { tags: ['v2 mail'], mail }); // GET /mail/:id/thread
  rawMail(api, { tags: ['v2 mail'], mail }); // GET /mail/:id/raw
  originalHtml(api, { tags: ['v2 mail'], mail }); // GET /mail/:id/html
  readSentEmail(api, { tags: ['v2 emails'] }); // GET /emails/:id
  replyToEmail(api, { tags: ['v2 emails'] }); // POST /emails/:id/reply
  retryDelivery(api, { tags: ['v2 deliveries'], deliveries }); // POST /emails/:id/retry-delivery
  resendEmail(api, { tags: ['v2 deliveries'], deliveries }); // POST /emails/:id/resend
  listDeliveries(api, { tags: ['v2 deliveries'], deliveries }); // GET /deliveries
  readDelivery(api, { tags: ['v2 deliveries'], deliveries }); // GET /deliveries/:id
  replayDeliveries(api, { tags: ['v2 deliveries'], deliveries }); // POST /deliveries/replay
  explainRouting(api, { tags: ['v2 routing'], explainRouting: services.explainRouting }); // POST /routing/explain
  listKeys(api, { tags: ['v2 keys'], accounts }); // GET /keys
  createKey(api, { tags: ['v2 keys'], accounts }); // POST /keys
  revokeKey(api, { tags: ['v2 keys'], accounts }); // DELETE /keys/:id
  readAccountRetention(api, { tags: ['v2 retention'], retention }); // GET /retention
  setAccountRetention(api, { tags: ['v2 retention'], retention }); // PUT /retention
  readDomainRetention(api, { tags: ['v2 retention'], retention }); // GET /domains/:id/retention
  setDomainRetention(api, { tags: ['v2 retention'], retention }); // PUT /domains/:id/retention
  readAddressRetention(api, { tags: ['v2 retention'], retention }); // GET /email-addresses/:id/retention
  setAddressRetention(api, { tags: ['v2 retention'], retention }); // PUT /email-addresses/:id/retention
  listAlerts(api, { tags: ['v2 alerts'], alerts }); // GET /alerts
  readAlertSettings(api, { tags: ['v2 alerts'], alerts }); // GET /alerts/settings
  setAlertSettings(api, { tags: ['v2 alerts'], alerts }); // PUT /alerts/settings
  readAlert(api, { tags: ['v2 alerts'], alerts }); // GET /alerts/:id
  acknowledgeAlert(api, { tags: ['v2 alerts'], alerts }); // POST /alerts/:id/acknowledge
  streamEvents(api, { tags: ['v2 events'], events: services.events, accounts }); // GET /events
};
