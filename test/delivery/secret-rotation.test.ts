import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { after, before, beforeEach, test } from 'node:test';
import { Webhook } from 'standardwebhooks';
import { movableClock } from '../helpers/clock.ts';
import { sendMail } from '../helpers/smtp.ts';
import { type ReceivedRequest, startWebhookReceiver, type WebhookReceiver } from '../helpers/webhook-receiver.ts';
import { type DeliveryWorld, routeAddress, routeToWebhook, startDeliveryWorld } from './setup.ts';

const secret = (text: string) => `whsec_${Buffer.from(text.padEnd(24, '.')).toString('base64')}`;
const [OLD, NEW] = [secret('the first secret'), secret('the second secret')];

const clock = movableClock();
let world: DeliveryWorld;
let receiver: WebhookReceiver;

before(async () => {
  receiver = await startWebhookReceiver();
  world = await startDeliveryWorld('rotation.test', {}, { clock });
});
after(async () => {
  await receiver.close();
  await world.close();
});
beforeEach(() => receiver.clear());

/** The request a message to `address` makes the receiver get. */
async function delivered(address: string): Promise<ReceivedRequest> {
  const sent = await sendMail({ port: world.server.smtpPort, to: address, subject: 'Hi', text: 'Hello' });
  assert.equal(sent.code, 250, sent.response);
  await receiver.waitForRequests(1);
  const [request] = receiver.requests;
  receiver.clear();
  return request!;
}

/** The `webhook-signature` entries, each checked by hand as Standard Webhooks defines it: which secret made it. */
function signedWith(request: ReceivedRequest): string[] {
  const { headers, body } = request;
  const content = `${headers['webhook-id']}.${headers['webhook-timestamp']}.${body}`;
  return String(headers['webhook-signature'] ?? '')
    .split(' ')
    .filter(Boolean)
    .map((signature) => {
      const key = [OLD, NEW].find((candidate) => {
        const mac = createHmac('sha256', Buffer.from(candidate.slice('whsec_'.length), 'base64'));
        return signature === `v1,${mac.update(content).digest('base64')}`;
      });
      return key === OLD ? 'old' : key === NEW ? 'new' : signature;
    });
}

const verifies = (key: string, request: ReceivedRequest) =>
  new Webhook(key).verify(request.body, request.headers as Record<string, string>);

test('an endpoint whose secret changes signs with both for a day, the new one first; then with the new one alone', async () => {
  const { endpoint, address } = await routeToWebhook(world, 'Hook', receiver.url, { secret: OLD });
  assert.deepEqual(signedWith(await delivered(address)), ['old']);

  const changed = await world.api.put(`/api/v2/endpoints/${endpoint.id}`, {
    config: { url: receiver.url, secret: NEW },
  });
  assert.equal(changed.status, 200, JSON.stringify(changed.body));
  assert.deepEqual(Object.keys(changed.body.config).sort(), [
    'retryAttempts',
    'secret',
    'timeout',
    'url',
    'verificationToken',
  ]);
  const during = await delivered(address);
  assert.deepEqual(signedWith(during), ['new', 'old']);
  // A receiver on either secret verifies it, with the package as by hand.
  assert.deepEqual(verifies(OLD, during), JSON.parse(during.body));
  assert.deepEqual(verifies(NEW, during), JSON.parse(during.body));
  const tested = await world.api.post(`/api/v2/endpoints/${endpoint.id}/test`, {});
  assert.equal(tested.body.success, true, JSON.stringify(tested.body));
  await receiver.waitForRequests(1);
  assert.deepEqual(signedWith(receiver.requests[0]!), ['new', 'old']);
  receiver.clear();

  // Another edit that keeps the secret keeps the day's end.
  clock.advanceMinutes(23 * 60);
  await world.api.put(`/api/v2/endpoints/${endpoint.id}`, { config: { url: receiver.url, secret: NEW, timeout: 10 } });
  assert.deepEqual(signedWith(await delivered(address)), ['new', 'old']);
  clock.advanceMinutes(61);
  assert.deepEqual(signedWith(await delivered(address)), ['new']);

  // Taking the secret away stops signing, the old one included.
  await world.api.put(`/api/v2/endpoints/${endpoint.id}`, { config: { url: receiver.url, secret: OLD } });
  await world.api.put(`/api/v2/endpoints/${endpoint.id}`, { config: { url: receiver.url } });
  const unsigned = await delivered(address);
  assert.equal(unsigned.headers['webhook-signature'], undefined);
  assert.match(String(unsigned.headers['webhook-id']), /^dlv_/);
});

test('a legacy webhook whose secret changes signs with both for a day; X-Webhook-Signature uses the new one', async () => {
  const created = await world.api.post('/api/v2/webhooks', { name: 'Legacy', url: receiver.url, secret: OLD });
  assert.equal(created.status, 201, JSON.stringify(created.body));
  const address = `legacy@${world.domain}`;
  await routeAddress(world.api, address, world.domainId, { webhookId: created.body.id });
  const changed = await world.api.put(`/api/v2/webhooks/${created.body.id}`, { secret: NEW });
  assert.equal(changed.status, 200, JSON.stringify(changed.body));
  assert.equal(changed.body.secret, NEW);
  const during = await delivered(address);
  assert.deepEqual(signedWith(during), ['new', 'old']);
  assert.equal(
    during.headers['x-webhook-signature'],
    `sha256=${createHmac('sha256', NEW).update(during.body).digest('hex')}`,
  );
  clock.advanceMinutes(24 * 60 + 1);
  assert.deepEqual(signedWith(await delivered(address)), ['new']);
});
