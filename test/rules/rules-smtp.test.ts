import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import Inbound from 'inboundemail';
import { createWebhookEndpoint, routeAddress, waitForDelivery } from '../delivery/setup.ts';
import { startTestApp, type TestApp } from '../helpers/app.ts';
import { type DnsServer, startDnsServer } from '../helpers/dns-server.ts';
import { createVerifiedDomain } from '../helpers/domains.ts';
import { type ApiClient, apiClient } from '../helpers/http.ts';
import { sendMail } from '../helpers/smtp.ts';
import { startWebhookReceiver, type WebhookReceiver } from '../helpers/webhook-receiver.ts';

let dns: DnsServer;
let server: TestApp;
let api: ApiClient;
let receiver: WebhookReceiver;
let domainId: string;
let main: { id: string };
let other: { id: string };

before(async () => {
  dns = await startDnsServer();
  receiver = await startWebhookReceiver();
  server = await startTestApp({ DNS_SERVERS: dns.address, DELIVERY_RETRY_SCALE: '0.001' });
  api = apiClient(server.baseUrl, server.apiKey);
  domainId = (await createVerifiedDomain(api, dns, 'rules.test')).id;
  main = await createWebhookEndpoint(api, 'Main', { url: `${receiver.url}?to=main` });
  other = await createWebhookEndpoint(api, 'Other', { url: `${receiver.url}?to=other` });
});
after(async () => {
  await receiver.close();
  await server.close();
  await dns.close();
});

/** A fresh address of rules.test routed to the main endpoint. */
async function mainAddress(local: string) {
  const address = `${local}@rules.test`;
  await routeAddress(api, address, domainId, { endpointId: main.id });
  return address;
}

async function createRule(body: Record<string, unknown>) {
  const created = await api.post('/api/e2/guard', body);
  assert.equal(created.status, 201, JSON.stringify(created.body));
  return created.body as { id: string; name: string };
}

async function deliver(to: string, options: Partial<Parameters<typeof sendMail>[0]> = {}) {
  const sent = await sendMail({ port: server.smtpPort, from: 'ann@sender.test', to, subject: 'Hello', ...options });
  assert.equal(sent.code, 250, sent.response);
  return sent.queuedIds[0]!;
}

async function deliveriesOf(emailId: string) {
  const list = await api.get(`/api/v2/deliveries?emailId=${emailId}`);
  assert.equal(list.status, 200);
  return list.body.data as Array<{ endpointId: string }>;
}

/** The webhook requests the receiver got for one email. */
const requestsFor = (emailId: string) =>
  receiver.requests.filter((request) => request.headers['x-email-id'] === emailId);

describe('rules at ingest, end to end over SMTP', () => {
  test('a block rule: the email is stored and flagged, and no webhook is queued or sent', async () => {
    const to = await mainAddress('blocked');
    const rule = await createRule({
      name: 'No invoices',
      conditions: { recipient: { operator: 'exact', value: to }, subject: { operator: 'contains', value: 'invoice' } },
      action: { type: 'block' },
    });
    const emailId = await deliver(to, { subject: 'Your INVOICE is due' });
    assert.deepEqual(await deliveriesOf(emailId), []);
    const read = await api.get(`/api/e2/emails/${emailId}`);
    assert.equal(read.status, 200);
    assert.deepEqual(read.body.guard, {
      matches: [{ ruleId: rule.id, name: 'No invoices', source: 'rule', action: 'block', applied: true }],
      blocked: true,
    });
    assert.deepEqual(read.body.tags, []);
    const passed = await deliver(to, { subject: 'Hello again' });
    assert.equal((await waitForDelivery(api, passed)).status, 'success');
    assert.deepEqual(requestsFor(emailId), []);
  });

  test('a route rule: the other endpoint receives the mail instead of the address target', async () => {
    const to = await mainAddress('routed');
    const rule = await createRule({
      name: 'Support header',
      conditions: {
        recipient: { operator: 'exact', value: to },
        headers: [{ name: 'X-Team', value: { operator: 'regex', value: '^[Ss]upp(ort)?$' } }],
      },
      action: { type: 'route', endpointId: other.id },
    });
    const emailId = await deliver(to, { headers: { 'X-Team': 'Support' } });
    const delivery = await waitForDelivery(api, emailId);
    assert.equal(delivery.status, 'success');
    assert.equal(delivery.endpointId, other.id);
    const [request] = requestsFor(emailId);
    assert.equal(request!.headers['x-endpoint-id'], other.id);
    assert.equal(request!.path, '/hook?to=other');
    const read = await api.get(`/api/v2/mail/${emailId}`);
    assert.deepEqual(read.body.guard, {
      matches: [
        {
          ruleId: rule.id,
          name: 'Support header',
          source: 'rule',
          action: 'route',
          applied: true,
          endpointId: other.id,
        },
      ],
      blocked: false,
      tags: [],
    });
  });

  test('a tag rule on a wildcard sender: the tag is on the email and the mail is delivered as usual', async () => {
    const to = await mainAddress('tagged');
    const rule = await createRule({
      name: 'VIP senders',
      conditions: {
        recipient: { operator: 'exact', value: to },
        sender: { operator: 'wildcard', value: '*@vip.test' },
      },
      action: { type: 'tag', tag: 'vip' },
    });
    const emailId = await deliver(to, { from: 'boss@vip.test' });
    assert.equal((await waitForDelivery(api, emailId)).endpointId, main.id);
    const read = await api.get(`/api/e2/emails/${emailId}`);
    assert.deepEqual(read.body.tags, ['vip']);
    // The e2 thread's messages carry tags as the inboundemail client types them, {name, value}.
    const thread = await new Inbound({ apiKey: server.apiKey, baseURL: server.baseUrl }).mail.retrieve(
      read.body.thread_id,
    );
    assert.deepEqual(thread.messages[0]!.tags, [{ name: 'tag', value: 'vip' }]);
    assert.deepEqual(read.body.guard, {
      matches: [{ ruleId: rule.id, name: 'VIP senders', source: 'rule', action: 'tag', applied: true, tag: 'vip' }],
      blocked: false,
    });
    const plain = await deliver(to, { from: 'someone@else.test' });
    assert.deepEqual((await api.get(`/api/e2/emails/${plain}`)).body.tags, []);
  });

  test('a wildcard subject rule that backtracks as one regex: a hostile subject is stored promptly, untagged', async () => {
    const to = await mainAddress('hostile');
    await createRule({
      name: 'Ends in b',
      conditions: {
        recipient: { operator: 'exact', value: to },
        subject: { operator: 'wildcard', value: '*a*a*a*a*a*a*b' },
      },
      action: { type: 'tag', tag: 'b' },
    });
    // As ^.*a.*a.*a.*a.*a.*a.*b$ this took seconds at 60 characters; 5,000 would block ingest far past the timeout.
    const hostile = await deliver(to, { subject: 'a'.repeat(5000) });
    const read = await api.get(`/api/e2/emails/${hostile}`);
    assert.equal(read.body.subject, 'a'.repeat(5000));
    assert.deepEqual(read.body.tags, []);
    assert.equal((await waitForDelivery(api, hostile)).status, 'success');
    const matching = await deliver(to, { subject: `${'a'.repeat(4999)}B` });
    assert.deepEqual((await api.get(`/api/e2/emails/${matching}`)).body.tags, ['b']);
  });

  test('matches combine by priority: the first block or route wins, later ones are recorded unapplied, tags add up', async () => {
    const to = await mainAddress('combined');
    const recipient = { operator: 'exact', value: to };
    const block = await createRule({
      name: 'Block',
      priority: 30,
      conditions: { recipient },
      action: { type: 'block' },
    });
    const tag = await createRule({
      name: 'Tag',
      priority: 10,
      conditions: { recipient },
      action: { type: 'tag', tag: 'a' },
    });
    const route = await createRule({
      name: 'Route',
      priority: 20,
      conditions: { recipient },
      action: { type: 'route', endpointId: other.id },
    });
    const tagB = await createRule({
      name: 'Tag B',
      priority: 40,
      conditions: { recipient },
      action: { type: 'tag', tag: 'b' },
    });
    const emailId = await deliver(to);
    assert.equal((await waitForDelivery(api, emailId)).endpointId, other.id);
    const read = await api.get(`/api/v2/mail/${emailId}`);
    assert.deepEqual(read.body.guard, {
      matches: [
        { ruleId: tag.id, name: 'Tag', source: 'rule', action: 'tag', applied: true, tag: 'a' },
        { ruleId: route.id, name: 'Route', source: 'rule', action: 'route', applied: true, endpointId: other.id },
        { ruleId: block.id, name: 'Block', source: 'rule', action: 'block', applied: false },
        { ruleId: tagB.id, name: 'Tag B', source: 'rule', action: 'tag', applied: true, tag: 'b' },
      ],
      blocked: false,
      tags: ['a', 'b'],
    });
  });

  test('a blocklisted sender domain: stored and flagged, not routed; after unblock it is routed again', async () => {
    const to = await mainAddress('listed');
    const added = await api.post('/api/e2/blocklist', { emailAddress: '*@Spam.test' });
    assert.equal(added.status, 201);
    const emailId = await deliver(to, { from: 'pest@spam.test' });
    assert.deepEqual(await deliveriesOf(emailId), []);
    const read = await api.get(`/api/e2/emails/${emailId}`);
    assert.deepEqual(read.body.guard, {
      matches: [{ ruleId: added.body.id, name: '*@spam.test', source: 'blocklist', action: 'block', applied: true }],
      blocked: true,
    });
    const unblocked = await api.post('/api/e2/blocklist/unblock', { emailAddress: '*@spam.test' });
    assert.equal(unblocked.status, 200);
    const after = await deliver(to, { from: 'pest@spam.test' });
    assert.equal((await waitForDelivery(api, after)).status, 'success');
    assert.deepEqual(requestsFor(emailId), []);
  });

  test('verdict conditions: spf none (no SPF record on the loopback DNS) matches, spf pass does not', async () => {
    const to = await mainAddress('verdicts');
    const recipient = { operator: 'exact', value: to };
    const none = await createRule({
      name: 'No SPF',
      conditions: { recipient, spf: ['none'] },
      action: { type: 'tag', tag: 'spf-none' },
    });
    await createRule({
      name: 'SPF pass',
      conditions: { recipient, spf: ['pass'] },
      action: { type: 'tag', tag: 'spf-pass' },
    });
    const emailId = await deliver(to, { from: 'ann@nospf.test' });
    const read = await api.get(`/api/v2/mail/${emailId}`);
    assert.equal(read.body.security.spf, 'NONE');
    assert.deepEqual(read.body.guard, {
      matches: [{ ruleId: none.id, name: 'No SPF', source: 'rule', action: 'tag', applied: true, tag: 'spf-none' }],
      blocked: false,
      tags: ['spf-none'],
    });
  });

  test('an inactive rule does not run at ingest', async () => {
    const to = await mainAddress('inactive');
    await createRule({
      name: 'Off',
      isActive: false,
      conditions: { recipient: { operator: 'exact', value: to } },
      action: { type: 'block' },
    });
    const emailId = await deliver(to);
    assert.equal((await waitForDelivery(api, emailId)).status, 'success');
    assert.deepEqual((await api.get(`/api/e2/emails/${emailId}`)).body.guard, { matches: [], blocked: false });
  });
});
