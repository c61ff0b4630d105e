import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { startTestApp, TEST_DATABASE_URL, type TestApp } from '../helpers/app.ts';
import { type DnsServer, startDnsServer } from '../helpers/dns-server.ts';
import { createVerifiedDomain } from '../helpers/domains.ts';
import { type ApiClient, apiClient } from '../helpers/http.ts';
import { sendMail } from '../helpers/smtp.ts';
import { holdSqliteWriteLock } from '../helpers/sqlite-lock.ts';
import { startWebhookReceiver, type WebhookReceiver } from '../helpers/webhook-receiver.ts';
import { createWebhookEndpoint, routeAddress, waitForDelivery } from './setup.ts';

/** Longer than SQLite's busy timeout (5 s), shorter than the lease. */
const LOCK_HELD_MS = 6_000;

let dns: DnsServer;
let server: TestApp;
let api: ApiClient;
let receiver: WebhookReceiver;

before(async () => {
  dns = await startDnsServer();
  receiver = await startWebhookReceiver();
  // One slot, so that the second test's second job can only be sent in the slot its first one left.
  server = await startTestApp({ DNS_SERVERS: dns.address, DELIVERY_LEASE_SECONDS: '10', DELIVERY_CONCURRENCY: '1' });
  api = apiClient(server.baseUrl, server.apiKey);
});
after(async () => {
  await receiver.close();
  await server.close();
  await dns.close();
});

test('an attempt finishing while another connection holds the write lock past the busy timeout is recorded once', {
  skip: TEST_DATABASE_URL ? 'SQLite write lock' : false,
}, async () => {
  const { id: domainId } = await createVerifiedDomain(api, dns, 'locked.test');
  const endpoint = await createWebhookEndpoint(api, 'Locked receiver', { url: receiver.url });
  await routeAddress(api, 'inbox@locked.test', domainId, { endpointId: endpoint.id });
  let lockTaken!: () => void;
  receiver.answer({ status: 200, body: 'ok', after: new Promise<void>((resolve) => (lockTaken = resolve)) });

  const sent = await sendMail({
    port: server.smtpPort,
    from: 'ann@sender.test',
    to: 'inbox@locked.test',
    subject: 'Locked',
    text: 'Hello',
  });
  assert.equal(sent.code, 250, sent.response);
  const emailId = sent.queuedIds[0]!;
  await receiver.waitForRequests(1);
  // The webhook is answered only once the lock is held, so its attempt finishes while the lock is.
  const lock = await holdSqliteWriteLock(join(server.dataDir, 'mailroom.sqlite'), LOCK_HELD_MS);
  lockTaken();
  await lock.released;

  const delivery = await waitForDelivery(api, emailId, (d) => d.status !== 'processing', 60_000);
  assert.equal(delivery.status, 'success');
  assert.equal(receiver.requests.length, 1);
  assert.equal(delivery.attempts, 1);
  assert.deepEqual(
    delivery.attemptLog.map((attempt) => [attempt.attempt, attempt.success, attempt.statusCode]),
    [[1, true, 200]],
  );
});

test('an attempt waiting for the write lock to record itself leaves its slot to the next job', {
  skip: TEST_DATABASE_URL ? 'SQLite write lock' : false,
}, async () => {
  const { id: domainId } = await createVerifiedDomain(api, dns, 'slots.test');
  const endpoint = await createWebhookEndpoint(api, 'Slot receiver', { url: receiver.url });
  await routeAddress(api, 'first@slots.test', domainId, { endpointId: endpoint.id });
  await routeAddress(api, 'second@slots.test', domainId, { endpointId: endpoint.id });
  const before = receiver.requests.length;
  let lockTaken!: () => void;
  receiver.answer(
    { status: 200, body: 'ok', after: new Promise<void>((resolve) => (lockTaken = resolve)) },
    { status: 200, body: 'ok' },
  );

  // One message to both addresses: two emails and their two jobs in one commit, handed to the worker, which has one
  // slot: the second job waits in memory for it.
  const sent = await sendMail({
    port: server.smtpPort,
    from: 'ann@sender.test',
    to: ['first@slots.test', 'second@slots.test'],
    subject: 'Two jobs, one slot',
    text: 'Hello',
  });
  assert.equal(sent.code, 250, sent.response);
  assert.equal(sent.queuedIds.length, 2);
  await receiver.waitForRequests(before + 1);
  const lock = await holdSqliteWriteLock(join(server.dataDir, 'mailroom.sqlite'), LOCK_HELD_MS);
  let lockReleased = false;
  void lock.released.then(() => (lockReleased = true));
  lockTaken();

  // The first attempt is answered and waits for the lock to record itself; the second is sent meanwhile.
  await receiver.waitForRequests(before + 2);
  assert.equal(lockReleased, false, 'the second webhook waited for the first attempt to be recorded');
  await lock.released;
  const deliveries = await Promise.all(
    sent.queuedIds.map((emailId) => waitForDelivery(api, emailId, (d) => d.status !== 'processing', 60_000)),
  );
  assert.deepEqual(
    deliveries.map((delivery) => [delivery.status, delivery.attempts]),
    [
      ['success', 1],
      ['success', 1],
    ],
  );
  assert.equal(receiver.requests.length, before + 2);
});
