import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { requireApiKey } from '../auth.ts';
import type { HttpServices } from '../server.ts';
import { listAttachments } from '../shared/attachments.ts';
import { sharedRoutes } from '../shared/routes.ts';
import { cancelEmail, replyToEmail } from '../shared/sending.ts';
import { blockSender, listBlockedSenders, unblockSender } from './blocklist.ts';
import { listEmails, readEmail, retryEmail, updateEmail } from './emails.ts';
import { checkRule, createRule, deleteRule, generateRule, listRules, readRule, updateRule } from './guard.ts';
import { listThreads, readThread } from './threads.ts';

/**
 * The `/api/e2` family: the shared routes with PATCH for catch-all and no domain `meta`, then e2's own, snake_case
 * received mail and threads. It has no delivery log and no legacy webhooks.
 */
export const e2Routes: FastifyPluginAsyncTypebox<HttpServices> = async (api, services) => {
  const { accounts, deliveries, mail, threads, rules, blocklist } = services;
  requireApiKey(api, accounts, services.apiRateLimit);
  sharedRoutes(api, services, { tagPrefix: 'e2', catchAllMethod: 'PATCH', domainMeta: false });
  listEmails(api, { tags: ['e2 emails'], mail });
  readEmail(api, { tags: ['e2 emails'], mail });
  updateEmail(api, { tags: ['e2 emails'], mail });
  replyToEmail(api, { tags: ['e2 emails'] });
  cancelEmail(api, { tags: ['e2 emails'] });
  retryEmail(api, { tags: ['e2 deliveries'], deliveries });
  listAttachments(api, { tags: ['e2 attachments'], mail });
  listThreads(api, { tags: ['e2 mail'], threads });
  readThread(api, { tags: ['e2 mail'], threads });
  listRules(api, { tags: ['e2 guard'], rules });
  createRule(api, { tags: ['e2 guard'], rules });
  generateRule(api, { tags: ['e2 guard'] });
  readRule(api, { tags: ['e2 guard'], rules });
  updateRule(api, { tags: ['e2 guard'], rules });
  deleteRule(api, { tags: ['e2 guard'], rules });
  checkRule(api, { tags: ['e2 guard'], rules });
  listBlockedSenders(api, { tags: ['e2 blocklist'], blocklist });
  blockSender(api, { tags: ['e2 blocklist'], blocklist });
  unblockSender(api, { tags: ['e2 blocklist'], blocklist });
};
