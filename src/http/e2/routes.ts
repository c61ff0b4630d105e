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
  listEmails(api, { tags: ['e2 emails'], mail }); // GET /emails
  readEmail(api, { tags: ['e2 emails'], mail }); // GET /emails/:id
  updateEmail(api, { tags: ['e2 emails'], mail }); // PATCH /emails/:id
  replyToEmail(api, { tags: ['e2 emails'] }); // POST /emails/:id/reply
  cancelEmail(api, { tags: ['e2 emails'] }); // DELETE /emails/:id
  retryEmail(api, { tags: ['e2 deliveries'], deliveries }); // POST /emails/:id/retry
  listAttachments(api, { tags: ['e2 attachments'], mail }); // GET /attachments/:emailId
  listThreads(api, { tags: ['e2 mail'], threads }); // GET /mail/threads
  readThread(api, { tags: ['e2 mail'], threads }); // GET /mail/threads/:id
  listRules(api, { tags: ['e2 guard'], rules }); // GET /guard
  createRule(api, { tags: ['e2 guard'], rules }); // POST /guard
  generateRule(api, { tags: ['e2 guard'] }); // POST /guard/generate
  readRule(api, { tags: ['e2 guard'], rules }); // GET /guard/:id
  updateRule(api, { tags: ['e2 guard'], rules }); // PUT /guard/:id
  deleteRule(api, { tags: ['e2 guard'], rules }); // DELETE /guard/:id
  checkRule(api, { tags: ['e2 guard'], rules }); // POST /guard/:id/check
  listBlockedSenders(api, { tags: ['e2 blocklist'], blocklist }); // GET /blocklist
  blockSender(api, { tags: ['e2 blocklist'], blocklist }); // POST /blocklist
  unblockSender(api, { tags: ['e2 blocklist'], blocklist }); // POST /blocklist/unblock
};
