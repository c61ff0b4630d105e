import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import nodemailer from 'nodemailer';
import { sendMail } from '../helpers/smtp.ts';
import { startWebhookReceiver, type WebhookReceiver } from '../helpers/webhook-receiver.ts';
import { type DeliveryWorld, routeToWebhook, startDeliveryWorld } from './setup.ts';

/** What one delivery slot keeps in memory beside the job it sends (see DeliveryWorker.newJobLease). */
const WAITING_PER_SLOT = 32;

let world: DeliveryWorld;
let receiver: WebhookReceiver;

before(async () => {
  receiver = await startWebhookReceiver();
  // Heartbeats far apart: none hands the waiting jobs back during the test. One sender sending back to back is a
  // burst the worker would yield to, leaving the jobs pending (see yield-to-ingest.test.ts): here they are leased.
  world = await startDeliveryWorld('waiting.test', {
    DELIVERY_CONCURRENCY: '1',
    DELIVERY_LEASE_SECONDS: '300',
    DELIVERY_YIELD_SECONDS: '0',
  });
});
after(async () => {
  await receiver.close();
  await world.close();
});

async function deliveriesWithStatus(status: string): Promise<number> {
  const list = await world.api.get(`/api/v2/deliveries?status=${status}&limit=1`);
  assert.equal(list.status, 200, JSON.stringify(list.body));
  return Number(list.body.pagination.total);
}

test('jobs beyond what the worker keeps waiting in memory are delivered in arrival order', async () => {
  const { address } = await routeToWebhook(world, 'Queue', receiver.url);
  let releaseFirst!: () => void;
  let releaseSecond!: () => void;
  receiver.answer(
    { status: 200, after: new Promise<void>((resolve) => (releaseFirst = resolve)) },
    { status: 200, after: new Promise<void>((resolve) => (releaseSecond = resolve)) },
    { status: 200 },
  );
  const transport = nodemailer.createTransport({
    host: '127.0.0.1',
    port: world.server.smtpPort,
    ignoreTLS: true,
    pool: true,
    maxConnections: 1,
  });
  const sent: string[] = [];
  const send = async () => {
    const n = sent.length + 1;
    const info = await transport.sendMail({
      from: 'ann@sender.test',
      to: address,
      subject: `Queued ${n}`,
      text: `Message ${n}`,
    });
    const id = /queued as (email_\w+)/.exec(String(info.response))?.[1];
    assert.ok(id, String(info.response));
    sent.push(id);
  };

  // The first job holds the one slot; the next WAITING_PER_SLOT wait leased in memory, the rest are left pending.
  const overflow = 7;
  for (let n = 0; n < 1 + WAITING_PER_SLOT + overflow; n++) await send();
  await receiver.waitForRequests(1);
  assert.equal(await deliveriesWithStatus('processing'), 1 + WAITING_PER_SLOT);
  assert.equal(await deliveriesWithStatus('pending'), overflow);

  // A slot's worth of room in memory again: a job committed now still goes behind those left pending.
  releaseFirst();
  await receiver.waitForRequests(2);
  await send();
  assert.equal(await deliveriesWithStatus('pending'), overflow + 1);
  releaseSecond();
  transport.close();

  await receiver.waitForRequests(sent.length, 30_000);
  assert.deepEqual(
    receiver.requests.map((request) => String(request.headers['x-email-id'])),
    sent,
  );
});

test('a job waiting in memory sends its own raw message, not the bytes of mail received after it', async () => {
  const ownReceiver = await startWebhookReceiver();
  try {
    const { address } = await routeToWebhook(world, 'Raw', ownReceiver.url);
    let releaseFirst!: () => void;
    ownReceiver.answer(
      { status: 200, after: new Promise<void>((resolve) => (releaseFirst = resolve)) },
      { status: 200 },
    );
    // Same length each, so that a later message would cover an earlier one's bytes exactly.
    const texts = ['Holds the slot', 'Waits: alpha  ', 'Waits: bravo  ', 'Waits: charlie'];
    const ids: string[] = [];
    for (const [n, text] of texts.entries()) {
      const sent = await sendMail({
        port: world.server.smtpPort,
        from: 'ann@sender.test',
        to: address,
        subject: `Raw ${n}`,
        text,
      });
      assert.equal(sent.code, 250, sent.response);
      ids.push(sent.queuedIds[0]!);
      if (n === 0) await ownReceiver.waitForRequests(1);
    }
    releaseFirst();
    await ownReceiver.waitForRequests(texts.length, 30_000);
    for (const [n, text] of texts.entries()) {
      const request = ownReceiver.requests.find((r) => r.headers['x-email-id'] === ids[n]);
      assert.ok(request, `webhook of message ${n}`);
      const raw: string = JSON.parse(request.body).email.parsedData.raw;
      assert.match(raw, new RegExp(`Subject: Raw ${n}\\r\\n`));
      assert.match(raw, new RegExp(`\\r\\n\\r\\n${text}`));
    }
  } finally {
    await ownReceiver.close();
  }
});
