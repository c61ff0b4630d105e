import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { eventually } from '../helpers/eventually.ts';
import { openSmtpConversation, sendMail } from '../helpers/smtp.ts';
import { type SpamdServer, startSpamdServer } from '../helpers/spamd-server.ts';
import { startWebhookReceiver, type WebhookReceiver } from '../helpers/webhook-receiver.ts';
import { createWebhookEndpoint, type DeliveryWorld, routeAddress, startDeliveryWorld } from './setup.ts';

/** Messages holding this wait for spamd's answer, and so for their 250, until the test releases them. */
const HOLD = 'hold-for-the-test';
/** Senders kept waiting for their 250: more than ingest's saturation level (4 on average) and fewer than its slots. */
const WAITING_SENDERS = 6;

let spamd: SpamdServer;
let receiver: WebhookReceiver;

before(async () => {
  spamd = await startSpamdServer();
  receiver = await startWebhookReceiver();
});
after(async () => {
  await receiver.close();
  await spamd.close();
});

/** A Mailroom with spamd, `routed@` sent to the receiver and `stored@` only stored, yielding for `yieldSeconds`. */
async function startWorld(domain: string, yieldSeconds: string): Promise<DeliveryWorld> {
  const world = await startDeliveryWorld(domain, {
    SPAMD_URL: spamd.url,
    SPAMD_TIMEOUT_SECONDS: '60',
    DELIVERY_YIELD_SECONDS: yieldSeconds,
  });
  const endpoint = await createWebhookEndpoint(world.api, `Receiver of ${domain}`, { url: receiver.url });
  await routeAddress(world.api, `routed@${domain}`, world.domainId, { endpointId: endpoint.id });
  await routeAddress(world.api, `stored@${domain}`, world.domainId, {});
  return world;
}

/** Keeps WAITING_SENDERS senders waiting for their 250 a while, so that ingest counts as saturated. */
async function keepSendersWaiting(world: DeliveryWorld) {
  spamd.holdAnswers(HOLD);
  const since = performance.timeOrigin + performance.now();
  const answered = Array.from({ length: WAITING_SENDERS }, (_, n) =>
    sendMail({ port: world.server.smtpPort, to: `stored@${world.domain}`, subject: `Held ${n}`, text: HOLD }),
  );
  await eventually(async () => spamd.heldAnswers === WAITING_SENDERS, 'every held message reached spamd');
  // Long enough for ingest's load to be measured over a full window with all of them waiting.
  await new Promise((resolve) => setTimeout(resolve, 300));
  return {
    /** When the senders began to wait: ingest was not saturated before. */
    since,
    async release() {
      spamd.releaseAnswers();
      for (const result of await Promise.all(answered)) assert.equal(result.code, 250, result.response);
    },
  };
}

async function pendingDeliveries(world: DeliveryWorld): Promise<number> {
  const list = await world.api.get('/api/v2/deliveries?status=pending&limit=1');
  assert.equal(list.status, 200, JSON.stringify(list.body));
  return Number(list.body.pagination.total);
}

async function sendRouted(world: DeliveryWorld): Promise<{ emailId: string }> {
  const sent = await sendMail({ port: world.server.smtpPort, to: `routed@${world.domain}`, text: 'Routed' });
  assert.equal(sent.code, 250, sent.response);
  return { emailId: sent.queuedIds[0]! };
}

function webhooksFor(emailId: string) {
  return receiver.requests.filter((request) => request.headers['x-email-id'] === emailId);
}

/** Asserts that the webhook of `emailId` stays pending for a second, and goes out once after `release` resolves. */
async function assertPendingUntil(world: DeliveryWorld, emailId: string, release: () => Promise<unknown>) {
  await new Promise((resolve) => setTimeout(resolve, 1000));
  assert.equal(webhooksFor(emailId).length, 0);
  assert.equal(await pendingDeliveries(world), 1);
  await release();
  await eventually(async () => webhooksFor(emailId).length === 1, 'the webhook arrived');
  await eventually(async () => (await pendingDeliveries(world)) === 0, 'no delivery pending');
  assert.equal(webhooksFor(emailId).length, 1);
}

/** Runs `body` against a fresh world yielding for `yieldSeconds`, then releases every held answer and stops it. */
async function inWorld(domain: string, yieldSeconds: string, body: (world: DeliveryWorld) => Promise<unknown>) {
  const world = await startWorld(domain, yieldSeconds);
  try {
    await body(world);
  } finally {
    spamd.releaseAnswers();
    await world.close();
  }
}

describe('the delivery worker yields to senders waiting for their 250', () => {
  test('a webhook waits, pending, while senders queue up, and goes out once they are answered', () =>
    inWorld('yield.test', '30', async (world) => {
      const senders = await keepSendersWaiting(world);
      const { emailId } = await sendRouted(world);
      await assertPendingUntil(world, emailId, () => senders.release());
    }));
});

/**
 * Sends message after message to `stored@` over one connection until `stop` is called, each MAIL FROM pipelined behind
 * the last end of DATA (as RFC 2920 allows), so that it follows the 250 however busy the machine is: a relay with mail
 * queued. Resolves to how many were sent.
 */
async function sendBackToBack(world: DeliveryWorld) {
  const smtp = await openSmtpConversation(world.server.smtpPort);
  assert.match(await smtp.command('EHLO client.test'), /PIPELINING/);
  const mailFrom = 'MAIL FROM:<relay@sender.test>';
  let stopped = false;
  let sent = 0;
  const sending = (async () => {
    assert.match(await smtp.command(mailFrom), /^250/);
    for (;;) {
      assert.match(await smtp.command(`RCPT TO:<stored@${world.domain}>`), /^250/);
      assert.match(await smtp.command('DATA'), /^354/);
      const last = stopped;
      await smtp.write(`Subject: Queued ${sent}\r\n\r\nOne of many.\r\n.\r\n${last ? '' : `${mailFrom}\r\n`}`);
      assert.match(await smtp.reply(), /^250/);
      sent++;
      if (last) break;
      assert.match(await smtp.reply(), /^250/);
    }
    await smtp.quit();
    return sent;
  })();
  return {
    get sent() {
      return sent;
    },
    stop() {
      stopped = true;
      return sending;
    },
  };
}

describe('the delivery worker yields to one sender sending back to back', () => {
  test('a webhook waits, pending, while a connection sends each message right behind the last', () =>
    inWorld('back-to-back.test', '30', async (world) => {
      const relay = await sendBackToBack(world);
      try {
        await eventually(async () => relay.sent >= 50, 'the relay sent 50 messages');
        const { emailId } = await sendRouted(world);
        const sentBefore = relay.sent;
        await assertPendingUntil(world, emailId, () => {
          assert.ok(relay.sent > sentBefore, 'the relay went on sending');
          return relay.stop();
        });
      } finally {
        await relay.stop();
      }
    }));
});

/** Sends a routed message while senders wait, and waits for its webhook, which must go out while they still wait. */
async function webhookWhileSendersWait(world: DeliveryWorld) {
  const senders = await keepSendersWaiting(world);
  const { emailId } = await sendRouted(world);
  await eventually(async () => webhooksFor(emailId).length === 1, 'the webhook arrived');
  assert.equal(spamd.heldAnswers, WAITING_SENDERS);
  await senders.release();
  return { webhook: webhooksFor(emailId)[0]!, waitingSince: senders.since };
}

describe('DELIVERY_YIELD_SECONDS', () => {
  test('bounds how long a webhook waits for a saturated ingest', () =>
    inWorld('bounded-yield.test', '1', async (world) => {
      const { webhook, waitingSince } = await webhookWhileSendersWait(world);
      const waitedMs = webhook.receivedAt - waitingSince;
      assert.ok(waitedMs >= 1000, `the webhook went out ${waitedMs} ms after the senders began to wait`);
    }));

  test('at 0 delivers while senders wait', () => inWorld('no-yield.test', '0', webhookWhileSendersWait));
});
