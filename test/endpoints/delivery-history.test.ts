import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
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

before(async () => {
  dns = await startDnsServer();
  receiver = await startWebhookReceiver();
  server = await startTestApp({ DNS_SERVERS: dns.address });
  api = apiClient(server.baseUrl, server.apiKey);
  domainId = (await createVerifiedDomain(api, dns, 'history.test')).id;
});
after(async () => {
  await receiver.close();
  await server.close();
  await dns.close();
});

async function deliver(to: string) {
  const sent = await sendMail({ port: server.smtpPort, to, subject: 'Hi', text: 'Hello' });
  assert.equal(sent.code, 250, sent.response);
  return sent.queuedIds[0]!;
}

/** Re-reads until `done` holds: delivery runs in the background, so the read settles rather than being timed. */
async function readUntil<T>(read: () => Promise<T>, done: (value: T) => boolean): Promise<T> {
  for (;;) {
    const value = await read();
    if (done(value)) return value;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

describe('delivery history on endpoints and legacy webhooks', () => {
  test('an endpoint read shows its deliveries; deleting it keeps them', async () => {
    const endpoint = (
      await api.post('/api/v2/endpoints', { name: 'Counted', type: 'webhook', config: { url: receiver.url } })
    ).body;
    await api.post('/api/v2/email-addresses', { address: 'counted@history.test', domainId, endpointId: endpoint.id });
    const emailId = await deliver('counted@history.test');

    // The counts and the recent deliveries are two reads, side by side on PostgreSQL's pool: one may see the outcome
    // before the other does.
    const read = await readUntil(
      () => api.get(`/api/e2/endpoints/${endpoint.id}`),
      (response) =>
        response.body.deliveryStats.successful === 1 && response.body.recentDeliveries[0]?.status === 'success',
    );
    assert.equal(receiver.requests.length, 1);
    const { deliveryStats, recentDeliveries } = read.body;
    assert.deepEqual(
      { ...deliveryStats, lastDelivery: typeof deliveryStats.lastDelivery },
      {
        total: 1,
        successful: 1,
        failed: 0,
        lastDelivery: 'string',
      },
    );
    assert.equal(recentDeliveries.length, 1);
    const [delivery] = recentDeliveries;
    assert.deepEqual(
      [delivery.emailId, delivery.deliveryType, delivery.status, delivery.attempts, delivery.lastAttemptAt],
      [emailId, 'webhook', 'success', 1, deliveryStats.lastDelivery],
    );
    assert.equal(delivery.responseData.responseCode, 200);
    const listed = await api.get('/api/v2/endpoints?type=webhook');
    assert.deepEqual(listed.body.data.find((e: { id: string }) => e.id === endpoint.id).deliveryStats, deliveryStats);

    const removed = await api.delete(`/api/v2/endpoints/${endpoint.id}`);
    assert.equal(removed.body.cleanup.deliveriesDeleted, 0);
    const kept = await server.app.database.db
      .selectFrom('deliveries')
      .select(['id', 'status'])
      .where('target_id', '=', endpoint.id)
      .execute();
    assert.deepEqual(
      kept.map((row) => ({ ...row })),
      [{ id: delivery.id, status: 'success' }],
    );
  });

  test('an endpoint the delivery worker switched off (410 Gone) loses its deactivation reason when switched on again', async () => {
    const endpoint = (
      await api.post('/api/v2/endpoints', { name: 'Gone', type: 'webhook', config: { url: receiver.url } })
    ).body;
    await api.post('/api/v2/email-addresses', { address: 'gone@history.test', domainId, endpointId: endpoint.id });
    receiver.answer({ status: 410, body: 'gone' });
    await deliver('gone@history.test');
    await readUntil(
      () => api.get(`/api/v2/endpoints/${endpoint.id}`),
      (response) => response.body.isActive === false,
    );
    receiver.answer({ status: 200 });
    const reason = () =>
      server.app.database.db
        .selectFrom('endpoints')
        .select('deactivated_reason')
        .where('id', '=', endpoint.id)
        .executeTakeFirstOrThrow()
        .then((row) => row.deactivated_reason);
    assert.match((await reason())!, /answered 410 Gone$/);
    const on = await api.put(`/api/e2/endpoints/${endpoint.id}`, { isActive: true });
    assert.equal(on.body.isActive, true);
    assert.equal(await reason(), null);
  });

  test('a legacy webhook counts its deliveries', async () => {
    const webhook = (await api.post('/api/v2/webhooks', { name: 'Old style', url: receiver.url })).body;
    await api.post('/api/v2/email-addresses', { address: 'legacy@history.test', domainId, webhookId: webhook.id });
    await deliver('legacy@history.test');
    const read = await readUntil(
      () => api.get(`/api/v2/webhooks/${webhook.id}`),
      (response) => response.body.successfulDeliveries === 1,
    );
    assert.deepEqual(
      [read.body.totalDeliveries, read.body.successfulDeliveries, read.body.failedDeliveries],
      [1, 1, 0],
    );
    assert.equal(typeof read.body.lastUsed, 'string');
  });

  test('an inactive endpoint receives nothing: the mail is stored without a delivery', async () => {
    const endpoint = (
      await api.post('/api/v2/endpoints', { name: 'Paused', type: 'webhook', config: { url: receiver.url } })
    ).body;
    await api.post('/api/v2/email-addresses', { address: 'paused@history.test', domainId, endpointId: endpoint.id });
    await api.put(`/api/v2/endpoints/${endpoint.id}`, { isActive: false });
    const before = receiver.requests.length;
    const emailId = await deliver('paused@history.test');
    const stored = await server.app.database.db.selectFrom('emails').select('id').where('id', '=', emailId).execute();
    assert.equal(stored.length, 1);
    const read = await api.get(`/api/v2/endpoints/${endpoint.id}`);
    assert.deepEqual(read.body.deliveryStats, { total: 0, successful: 0, failed: 0, lastDelivery: null });
    assert.equal(receiver.requests.length, before);
  });
});
