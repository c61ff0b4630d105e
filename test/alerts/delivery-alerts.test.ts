import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { createWebhookEndpoint, routeAddress, waitForDelivery } from '../delivery/setup.ts';
import { startWebhookReceiver, type WebhookReceiver } from '../helpers/webhook-receiver.ts';
import {
  type AlertWorld,
  alertEvents,
  startAlertWorld,
  verifiedAlertWebhooks,
  waitForAlert,
  waitForEvent,
} from './setup.ts';

/**
 * Delivery alerts: flaky@ goes to an endpoint whose receiver answers 500 until the test fixes it (one retry, so a
 * delivery gives up after two attempts), gone@ to one whose receiver answers 410 Gone.
 */
let world: AlertWorld;
let flaky: WebhookReceiver;
let gone: WebhookReceiver;
let flakyId: string;
let goneId: string;

before(async () => {
  world = await startAlertWorld([]);
  flaky = await startWebhookReceiver();
  gone = await startWebhookReceiver();
  const domain = await world.api.post('/api/v2/domains', { domain: 'deliv.test' });
  for (const record of domain.body.dnsRecords) {
    if (!record.isRequired) continue;
    if (record.type === 'MX') world.dns.add(record.name, { type: 'MX', exchange: 'mx.mailroom.test', priority: 10 });
    else world.dns.add(record.name, { type: 'TXT', data: record.value });
  }
  assert.equal((await world.api.get(`/api/v2/domains/${domain.body.id}?check=true`)).body.status, 'verified');
  flakyId = (await createWebhookEndpoint(world.api, 'Flaky hook', { url: flaky.url, retryAttempts: 1 })).id;
  goneId = (await createWebhookEndpoint(world.api, 'Gone hook', { url: gone.url })).id;
  await routeAddress(world.api, 'flaky@deliv.test', domain.body.id, { endpointId: flakyId });
  await routeAddress(world.api, 'gone@deliv.test', domain.body.id, { endpointId: goneId });
});
after(async () => {
  await world.close();
  await flaky.close();
  await gone.close();
});

/** Sends one message to `to` and waits for its delivery to end. */
async function deliverAndSettle(to: string, subject: string) {
  const [emailId] = await world.deliver({ from: 'ann@sender.test', to, subject, text: 'hello' });
  const delivery = await waitForDelivery(world.api, emailId!);
  // The delivery's last event commits with any alert it raised: once it is on the stream, so is the alert's.
  await waitForEvent(
    world.stream,
    (event) =>
      event.data.deliveryId === delivery.id && (event.event === 'delivery.succeeded' || event.data.final === true),
  );
  return delivery;
}

test('a delivery that exhausts its retries raises delivery_failed for its endpoint, once for two such deliveries', async () => {
  flaky.answer({ status: 500, body: 'broken' });
  const first = await deliverAndSettle('flaky@deliv.test', 'First');
  assert.deepEqual([first.status, first.attempts], ['failed', 2]);
  const raised = await waitForAlert(world.stream, 'alert.raised', 'Flaky hook');
  assert.deepEqual(raised, {
    id: raised.id,
    kind: 'delivery_failed',
    subject: { type: 'endpoint', id: flakyId, name: 'Flaky hook' },
    details: { deliveryId: first.id, emailId: first.emailId, attempts: 2, statusCode: 500, error: 'HTTP 500' },
    status: 'open',
    raisedAt: raised.raisedAt,
    clearedAt: null,
    acknowledgedAt: null,
    acknowledgedBy: null,
  });
  const second = await deliverAndSettle('flaky@deliv.test', 'Second');
  assert.equal(second.status, 'failed');
  assert.deepEqual(alertEvents(world.stream), [['alert.raised', 'delivery_failed', 'Flaky hook']]);
  await world.alerts.waitForRequests(1);
  assert.deepEqual(verifiedAlertWebhooks(world), [['alert.raised', 'delivery_failed', 'Flaky hook']]);
  assert.deepEqual((await world.api.get('/api/v2/alerts?status=open')).body.data, [raised]);
});

test('a later delivery to the endpoint that succeeds clears delivery_failed', async () => {
  flaky.answer({ status: 200, body: 'ok' });
  const third = await deliverAndSettle('flaky@deliv.test', 'Third');
  assert.equal(third.status, 'success');
  const cleared = await waitForAlert(world.stream, 'alert.cleared', 'Flaky hook');
  assert.equal(cleared.status, 'cleared');
  await world.alerts.waitForRequests(2);
  assert.deepEqual(verifiedAlertWebhooks(world), [
    ['alert.raised', 'delivery_failed', 'Flaky hook'],
    ['alert.cleared', 'delivery_failed', 'Flaky hook'],
  ]);
  assert.deepEqual((await world.api.get('/api/v2/alerts?status=open')).body.data, []);
});

test('410 Gone raises endpoint_deactivated (not delivery_failed); reactivating the endpoint clears it', async () => {
  gone.answer({ status: 410, body: 'gone' });
  const delivery = await deliverAndSettle('gone@deliv.test', 'Gone');
  assert.deepEqual([delivery.status, delivery.attempts], ['failed', 1]);
  const raised = await waitForAlert(world.stream, 'alert.raised', 'Gone hook');
  assert.equal(raised.kind, 'endpoint_deactivated');
  assert.deepEqual(raised.subject, { type: 'endpoint', id: goneId, name: 'Gone hook' });
  assert.equal(raised.details.statusCode, 410);
  assert.equal((await world.api.get(`/api/v2/endpoints/${goneId}`)).body.isActive, false);

  const reactivated = await world.api.put(`/api/v2/endpoints/${goneId}`, { isActive: true });
  assert.equal(reactivated.status, 200);
  await waitForAlert(world.stream, 'alert.cleared', 'Gone hook');
  await world.alerts.waitForRequests(4);
  assert.deepEqual(verifiedAlertWebhooks(world).slice(2), [
    ['alert.raised', 'endpoint_deactivated', 'Gone hook'],
    ['alert.cleared', 'endpoint_deactivated', 'Gone hook'],
  ]);
  assert.deepEqual(alertEvents(world.stream), [
    ['alert.raised', 'delivery_failed', 'Flaky hook'],
    ['alert.cleared', 'delivery_failed', 'Flaky hook'],
    ['alert.raised', 'endpoint_deactivated', 'Gone hook'],
    ['alert.cleared', 'endpoint_deactivated', 'Gone hook'],
  ]);
});

test('an alert webhook the alert endpoint refuses is retried until it takes it, with the same webhook-id', async () => {
  world.alerts.clear();
  world.alerts.answer({ status: 503 }, { status: 200 });
  flaky.answer({ status: 500 });
  await deliverAndSettle('flaky@deliv.test', 'Fourth');
  await world.alerts.waitForRequests(2);
  const [refused, taken] = world.alerts.requests;
  assert.equal(refused!.headers['webhook-id'], taken!.headers['webhook-id']);
  assert.equal(refused!.body, taken!.body);
  assert.deepEqual(verifiedAlertWebhooks(world), [
    ['alert.raised', 'delivery_failed', 'Flaky hook'],
    ['alert.raised', 'delivery_failed', 'Flaky hook'],
  ]);
});
