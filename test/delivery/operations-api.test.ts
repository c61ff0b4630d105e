import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, test } from 'node:test';
import { Inbound as InboundSdk } from '@inboundemail/sdk';
import Inbound from 'inboundemail';
import type { TestApp } from '../helpers/app.ts';
import type { ApiClient } from '../helpers/http.ts';
import { sendMail } from '../helpers/smtp.ts';
import { startWebhookReceiver, type WebhookReceiver } from '../helpers/webhook-receiver.ts';
import {
  createWebhookEndpoint,
  type DeliveryWorld,
  routeToWebhook,
  startDeliveryWorld,
  waitForDelivery,
} from './setup.ts';

let world: DeliveryWorld;
let server: TestApp;
let api: ApiClient;
let receiver: WebhookReceiver;
let e2: Inbound;
let v2: InboundSdk;

before(async () => {
  receiver = await startWebhookReceiver();
  world = await startDeliveryWorld('ops.test', { PUBLIC_URL: 'https://mail.example.test' });
  ({ server, api } = world);
  e2 = new Inbound({ apiKey: server.apiKey, baseURL: server.baseUrl, maxRetries: 0 });
  v2 = new InboundSdk(server.apiKey, `${server.baseUrl}/api/v2`);
});
after(async () => {
  await receiver.close();
  await world.close();
});
beforeEach(() => receiver.clear());

const webhookAddress = (config: Record<string, unknown> = {}) => routeToWebhook(world, 'Ops', receiver.url, config);

async function deliver(to: string) {
  const sent = await sendMail({ port: server.smtpPort, from: 'ann@sender.test', to, subject: 'Ops', text: 'body' });
  assert.equal(sent.code, 250, sent.response);
  return sent.queuedIds[0]!;
}

describe('endpoint read: deliveryStats and recentDeliveries come from the delivery log', () => {
  test('both clients read stats and the latest delivery with responseData {responseCode, responseBody, deliveryTime, url}', async () => {
    const { endpoint, address } = await webhookAddress({ retryAttempts: 0 });
    receiver.answer({ status: 200, body: 'thanks' }, { status: 500, body: 'broken' });
    const okId = await deliver(address);
    await waitForDelivery(api, okId);
    const failedId = await deliver(address);
    await waitForDelivery(api, failedId);

    const read = await e2.endpoints.retrieve(endpoint.id);
    assert.equal(read.deliveryStats.total, 2);
    assert.equal(read.deliveryStats.successful, 1);
    assert.equal(read.deliveryStats.failed, 1);
    assert.equal(typeof read.deliveryStats.lastDelivery, 'string');
    assert.deepEqual(
      read.recentDeliveries.map((d) => [d.emailId, d.status, d.attempts, d.deliveryType]),
      [
        [failedId, 'failed', 1, 'webhook'],
        [okId, 'success', 1, 'webhook'],
      ],
    );
    const latest = read.recentDeliveries[0]!.responseData as Record<string, unknown>;
    assert.equal(latest.responseCode, 500);
    assert.equal(latest.responseBody, 'broken');
    assert.equal(latest.url, receiver.url);
    assert.equal(typeof latest.deliveryTime, 'number');

    const viaSdk = await v2.endpoint.get(endpoint.id);
    assert.equal(viaSdk.error, undefined);
    assert.deepEqual(viaSdk.data!.deliveryStats, read.deliveryStats);
    assert.equal(viaSdk.data!.recentDeliveries.length, 2);
  });
});

describe('POST /endpoints/{id}/test', () => {
  test('@inboundemail/sdk posts it with an empty JSON body: a synthetic email.received shaped like a real one', async () => {
    const { endpoint } = await webhookAddress();
    receiver.answer({ status: 202, body: 'accepted' });
    const result = await v2.endpoint.test(endpoint.id);
    assert.equal(result.error, undefined);
    assert.equal(result.data.success, true);
    assert.equal(result.data.statusCode, 202);
    assert.equal(result.data.responseBody, 'accepted');
    assert.equal(result.data.message, 'Webhook test successful');
    assert.equal(typeof result.data.responseTime, 'number');
    const [request] = receiver.requests;
    const body = JSON.parse(request!.body);
    assert.equal(request!.headers['x-webhook-event'], 'email.received');
    assert.equal(request!.headers['x-endpoint-id'], endpoint.id);
    assert.deepEqual(Object.keys(body), ['event', 'timestamp', 'email', 'endpoint']);
    assert.deepEqual(Object.keys(body.email), [
      'id',
      'messageId',
      'from',
      'to',
      'recipient',
      'subject',
      'receivedAt',
      'threadId',
      'threadPosition',
      'parsedData',
      'cleanedContent',
    ]);
    assert.equal(
      body.email.parsedData.attachments[0].downloadUrl,
      `https://mail.example.test/api/e2/attachments/${body.email.id}/parts/0`,
    );
  });

  test('inboundemail client: a failing receiver is reported, not thrown', async () => {
    const { endpoint } = await webhookAddress();
    receiver.answer({ status: 500, body: 'down for maintenance' });
    const result = await e2.endpoints.test(endpoint.id, {});
    assert.equal(result.success, false);
    assert.equal(result.statusCode, 500);
    assert.equal(result.responseBody, 'down for maintenance');
    assert.equal(result.message, 'Webhook test failed: HTTP 500');
  });

  test('404 Endpoint not found for an unknown id', async () => {
    const response = await api.post('/api/v2/endpoints/endp_unknown/test');
    assert.equal(response.status, 404);
    assert.deepEqual(response.body, { error: 'Endpoint not found' });
  });
});

describe('retrying an email delivery', () => {
  test('inboundemail emails.retry queues a failed delivery again; it then succeeds with the same webhook-id', async () => {
    const { address } = await webhookAddress({ retryAttempts: 0 });
    receiver.answer({ status: 500 }, { status: 200 });
    const emailId = await deliver(address);
    const failed = await waitForDelivery(api, emailId);
    assert.equal(failed.status, 'failed');

    const retried = await e2.emails.retry(emailId, { delivery_id: failed.id });
    assert.deepEqual(retried, { success: true, message: 'Delivery queued for retry', delivery_id: failed.id });
    const delivery = await waitForDelivery(api, emailId, (d) => d.status === 'success');
    assert.equal(delivery.attempts, 2);
    assert.equal(receiver.requests[0]!.headers['webhook-id'], receiver.requests[1]!.headers['webhook-id']);

    const again = await api.post(`/api/e2/emails/${emailId}/retry`, {});
    assert.equal(again.status, 400);
    assert.deepEqual(again.body, { error: 'Delivery already succeeded. Use resend to deliver again.' });
  });

  test('e2 retry with endpoint_id delivers to an endpoint the email never went to', async () => {
    const { address } = await webhookAddress();
    const emailId = await deliver(address);
    await waitForDelivery(api, emailId);
    const other = await createWebhookEndpoint(api, 'Other', { url: `${receiver.url}?other=1` });
    const retried = await api.post(`/api/e2/emails/${emailId}/retry`, { endpoint_id: other.id });
    assert.equal(retried.status, 200, JSON.stringify(retried.body));
    await receiver.waitForRequests(2);
    assert.deepEqual(
      receiver.requests.map((r) => [r.path, r.headers['x-endpoint-id']]),
      [
        ['/hook', receiver.requests[0]!.headers['x-endpoint-id']],
        ['/hook?other=1', other.id],
      ],
    );
  });

  test('retry errors use the reference strings', async () => {
    const { address } = await webhookAddress();
    const emailId = await deliver(address);
    await waitForDelivery(api, emailId);
    const cases: Array<[string, unknown, number, string]> = [
      ['/api/e2/emails/email_missing/retry', {}, 404, 'Email not found'],
      [`/api/e2/emails/${emailId}/retry`, { delivery_id: 'dlv_missing' }, 404, 'Delivery not found for this email'],
      [`/api/e2/emails/${emailId}/retry`, { endpoint_id: 'endp_missing' }, 404, 'Endpoint not found or is inactive'],
      [`/api/v2/emails/${emailId}/retry-delivery`, {}, 400, 'deliveryId is required'],
      [
        `/api/v2/emails/${emailId}/retry-delivery`,
        { deliveryId: 'dlv_missing' },
        404,
        'Delivery not found for this email',
      ],
    ];
    for (const [path, body, status, error] of cases) {
      const response = await api.post(path, body);
      assert.equal(response.status, status, path);
      assert.deepEqual(response.body, { error }, path);
    }
  });

  test('a delivery being attempted is not queued again: 409, and it ends as its attempt does', async () => {
    const { address } = await webhookAddress({ retryAttempts: 0 });
    let answer!: () => void;
    receiver.answer({ status: 500, after: new Promise<void>((resolve) => (answer = resolve)) });
    const emailId = await deliver(address);
    await receiver.waitForRequests(1);
    const [inFlight] = (await api.get(`/api/v2/deliveries?emailId=${emailId}`)).body.data;
    assert.equal(inFlight.status, 'processing');
    const error = 'Delivery is being attempted now: retry it once this attempt is recorded';
    for (const [path, body] of [
      [`/api/v2/emails/${emailId}/retry-delivery`, { deliveryId: inFlight.id }],
      [`/api/e2/emails/${emailId}/retry`, { delivery_id: inFlight.id }],
    ] as const) {
      const response = await api.post(path, body);
      assert.deepEqual([response.status, response.body], [409, { error }], path);
      // Unlike a clash with stored state, this one passes: clients that retry on their own may ask again.
      assert.equal(response.headers.get('x-should-retry'), 'true', path);
    }
    answer();
    const failed = await waitForDelivery(api, emailId);
    assert.deepEqual([failed.status, failed.attempts], ['failed', 1]);
  });

  test('resend delivers a succeeded email to its endpoint again, the same delivery with a fresh budget', async () => {
    const { address, endpoint } = await webhookAddress();
    const emailId = await deliver(address);
    const first = await waitForDelivery(api, emailId);
    assert.equal(first.status, 'success');
    const refused = await api.post(`/api/v2/emails/${emailId}/retry-delivery`, { deliveryId: first.id });
    assert.deepEqual(refused.body, { error: 'Delivery already succeeded. Use resend to deliver again.' });

    const resent = await api.post(`/api/v2/emails/${emailId}/resend`, { endpointId: endpoint.id });
    assert.equal(resent.status, 200, JSON.stringify(resent.body));
    assert.deepEqual(resent.body, { success: true, message: 'Email queued for delivery', deliveryId: first.id });
    await receiver.waitForRequests(2);
    assert.deepEqual(
      receiver.requests.map((request) => request.headers['webhook-id']),
      [first.id, first.id],
    );
    assert.equal((await waitForDelivery(api, emailId, (d) => d.attempts === 2)).status, 'success');
    for (const [body, status, error] of [
      [{}, 400, 'endpointId is required'],
      [{ endpointId: 'endp_missing' }, 404, 'Endpoint not found or is inactive'],
    ] as const) {
      const response = await api.post(`/api/v2/emails/${emailId}/resend`, body);
      assert.deepEqual([response.status, response.body], [status, { error }]);
    }
    const missing = await api.post('/api/v2/emails/email_missing/resend', { endpointId: endpoint.id });
    assert.deepEqual([missing.status, missing.body], [404, { error: 'Email not found' }]);
  });

  test('v2 retry-delivery queues the delivery by id', async () => {
    const { address } = await webhookAddress({ retryAttempts: 0 });
    receiver.answer({ status: 500 }, { status: 200 });
    const emailId = await deliver(address);
    const failed = await waitForDelivery(api, emailId);
    const response = await api.post(`/api/v2/emails/${emailId}/retry-delivery`, { deliveryId: failed.id });
    assert.equal(response.status, 200);
    assert.deepEqual(response.body, { success: true, message: 'Delivery queued for retry', deliveryId: failed.id });
    assert.equal((await waitForDelivery(api, emailId, (d) => d.status === 'success')).attempts, 2);
  });
});

describe('POST /api/v2/deliveries/replay', () => {
  test('re-queues the failed deliveries matching endpoint and time range, and reports how many', async () => {
    const { endpoint, address } = await webhookAddress({ retryAttempts: 0 });
    receiver.answer({ status: 500 });
    const ids = [await deliver(address), await deliver(address), await deliver(address)];
    for (const id of ids) assert.equal((await waitForDelivery(api, id)).status, 'failed');

    const none = await api.post('/api/v2/deliveries/replay', {
      endpointId: endpoint.id,
      until: '2020-01-01T00:00:00Z',
    });
    assert.deepEqual(none.body, { replayed: 0, deliveryIds: [] });

    receiver.answer({ status: 200 });
    const since = new Date(Date.now() - 60_000).toISOString();
    const replay = await api.post('/api/v2/deliveries/replay', { endpointId: endpoint.id, status: 'failed', since });
    assert.equal(replay.status, 200);
    assert.equal(replay.body.replayed, 3);
    for (const id of ids) assert.equal((await waitForDelivery(api, id, (d) => d.status === 'success')).attempts, 2);
  });

  test('400 for a since that is not a date, 404 for an unknown endpoint', async () => {
    const bad = await api.post('/api/v2/deliveries/replay', { since: 'yesterday' });
    assert.equal(bad.status, 400);
    assert.deepEqual(bad.body, { error: 'since must be an ISO 8601 date-time' });
    const unknown = await api.post('/api/v2/deliveries/replay', { endpointId: 'endp_nope' });
    assert.equal(unknown.status, 404);
    assert.deepEqual(unknown.body, { error: 'Endpoint not found' });
  });

  test('404 for an empty endpointId, which names no endpoint, and nothing is replayed', async () => {
    const { address } = await webhookAddress({ retryAttempts: 0 });
    receiver.answer({ status: 500 });
    const failedId = await deliver(address);
    assert.equal((await waitForDelivery(api, failedId)).status, 'failed');
    const empty = await api.post('/api/v2/deliveries/replay', { endpointId: '' });
    assert.equal(empty.status, 404);
    assert.deepEqual(empty.body, { error: 'Endpoint not found' });
    const form = await api.post('/api/v2/deliveries/replay', undefined, {
      raw: new URLSearchParams({ endpointId: '' }),
    });
    assert.equal(form.status, 404);
    const [delivery] = (await api.get(`/api/v2/deliveries?emailId=${failedId}`)).body.data;
    assert.equal(delivery.status, 'failed');
  });

  test('400 for a property it does not know: a misspelt endpointId would replay every endpoint', async () => {
    const misspelt = await api.post('/api/v2/deliveries/replay', { endpointid: 'endp_nope' });
    assert.equal(misspelt.status, 400);
    assert.deepEqual(misspelt.body, { error: 'Invalid request: body/endpointid is not a known property' });
  });
});
