import assert from 'node:assert/strict';
import { test } from 'node:test';
import { sendMail } from '../helpers/smtp.ts';
import { startWebhookReceiver } from '../helpers/webhook-receiver.ts';
import { routeToWebhook, startDeliveryWorld } from './setup.ts';

/**
 * While several messages are being received at once, a webhook waits (DELIVERY_YIELD_SECONDS at most) so that
 * receiving goes first. Three messages from senders whose DNS answers 1.5 s late stay in ingest meanwhile.
 */
const DNS_DELAY_MS = 1500;

async function webhookAgainstSlowMessages(yieldSeconds: string) {
  const world = await startDeliveryWorld('yield.test', { DELIVERY_YIELD_SECONDS: yieldSeconds });
  const receiver = await startWebhookReceiver();
  try {
    const { address } = await routeToWebhook(world, 'Yield', receiver.url);
    world.dns.slow('slow.test', DNS_DELAY_MS);
    const slowSentAt = performance.timeOrigin + performance.now();
    const slowAnswered: number[] = [];
    const slow = ['one', 'two', 'three'].map(async (name) => {
      const sent = await sendMail({ port: world.server.smtpPort, from: `${name}@${name}.slow.test`, to: address });
      assert.equal(sent.code, 250, sent.response);
      slowAnswered.push(performance.timeOrigin + performance.now());
    });
    await new Promise((resolve) => setTimeout(resolve, 300));
    const fast = await sendMail({ port: world.server.smtpPort, from: 'ann@fast.test', to: address });
    assert.equal(fast.code, 250, fast.response);
    const fastAnswered = performance.timeOrigin + performance.now();
    await Promise.all(slow);
    await receiver.waitForRequests(4);
    const fastWebhook = receiver.requests.find((request) => request.body.includes('ann@fast.test'));
    assert.ok(fastWebhook, 'the fast message was delivered');
    assert.equal(receiver.requests.length, 4);
    // No slow message can be taken in before its DNS answers come.
    const slowTakenInAfter = slowSentAt + DNS_DELAY_MS;
    assert.ok(fastAnswered < slowTakenInAfter, 'the fast message was answered while the slow ones were in ingest');
    assert.ok(Math.min(...slowAnswered) >= slowTakenInAfter);
    return { fastWebhookMs: fastWebhook.receivedAt - slowSentAt };
  } finally {
    await receiver.close();
    await world.close();
  }
}

test('a webhook waits while three other messages are being received, and goes once they are taken in', async () => {
  const { fastWebhookMs } = await webhookAgainstSlowMessages('30');
  assert.ok(fastWebhookMs >= DNS_DELAY_MS, `webhook ${fastWebhookMs} ms after the slow messages were sent`);
});

test('DELIVERY_YIELD_SECONDS bounds the wait: at 0.2 the webhook goes while the others are still being received', async () => {
  const { fastWebhookMs } = await webhookAgainstSlowMessages('0.2');
  assert.ok(fastWebhookMs < DNS_DELAY_MS, `webhook ${fastWebhookMs} ms after the slow messages were sent`);
});
