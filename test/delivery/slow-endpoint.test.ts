import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { sendMail } from '../helpers/smtp.ts';
import { startWebhookReceiver, type WebhookReceiver } from '../helpers/webhook-receiver.ts';
import { type DeliveryWorld, routeToWebhook, startDeliveryWorld } from './setup.ts';

let world: DeliveryWorld;
let hanging: WebhookReceiver;
let healthy: WebhookReceiver;

before(async () => {
  hanging = await startWebhookReceiver();
  healthy = await startWebhookReceiver();
  // Heartbeats every second: jobs waiting for the hanging endpoint's slots are soon handed back and left pending,
  // and from then on every claim must leave them there.
  world = await startDeliveryWorld('slow.test', {
    DELIVERY_CONCURRENCY: '4',
    DELIVERY_CONCURRENCY_PER_ENDPOINT: '2',
    DELIVERY_LEASE_SECONDS: '3',
  });
});
after(async () => {
  await hanging.close();
  await healthy.close();
  await world.close();
});

async function countWithStatus(status: string): Promise<number> {
  return Number((await world.api.get(`/api/v2/deliveries?status=${status}&limit=1`)).body.pagination.total);
}

test('an endpoint that never answers holds two of the four slots; another endpoint is delivered at once', async () => {
  hanging.answer('hang');
  const slow = await routeToWebhook(world, 'Hang', hanging.url, { timeout: 60, retryAttempts: 0 });
  const fast = await routeToWebhook(world, 'Fast', healthy.url);
  for (let n = 1; n <= 6; n++) {
    const sent = await sendMail({ port: world.server.smtpPort, to: slow.address, subject: `Stuck ${n}` });
    assert.equal(sent.code, 250, sent.response);
  }
  await hanging.waitForRequests(2);
  // Two heartbeats: the four jobs without a slot are handed back, and claims since have left them pending.
  await new Promise((resolve) => setTimeout(resolve, 2500));
  assert.deepEqual([await countWithStatus('processing'), await countWithStatus('pending')], [2, 4]);

  const sent = await sendMail({ port: world.server.smtpPort, to: fast.address, subject: 'Through' });
  assert.equal(sent.code, 250, sent.response);
  await healthy.waitForRequests(1, 3000);
  assert.equal(JSON.parse(healthy.requests[0]!.body).email.subject, 'Through');
  assert.equal(hanging.requests.length, 2);
});
