import assert from 'node:assert/strict';
import { readdirSync, readlinkSync } from 'node:fs';
import { mkdir, readdir, rm, stat, truncate } from 'node:fs/promises';
import { createServer, type Server, type Socket } from 'node:net';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { type MailroomProcess, startMailroom } from '../delivery/processes.ts';
import { createForwardEndpoint, createWebhookEndpoint, routeAddress, waitForDelivery } from '../delivery/setup.ts';
import { type DnsServer, startDnsServer } from '../helpers/dns-server.ts';
import { createVerifiedDomain } from '../helpers/domains.ts';
import { createInstallation } from '../helpers/process.ts';
import { sendMail } from '../helpers/smtp.ts';
import { startWebhookReceiver, type WebhookReceiver } from '../helpers/webhook-receiver.ts';

const API_KEY = 'mr_test_damaged_blobs_0123456789ab';
const ADDRESS = 'inbox@damaged.test';
const ATTACHMENT = { filename: 'report.txt', content: 'figures\n'.repeat(500) };

let dns: DnsServer;
let receiver: WebhookReceiver;
let installation: Awaited<ReturnType<typeof createInstallation>>;
let server: MailroomProcess;
/** The forwards' relay: it takes connections and never answers, so a forward stays in flight. */
let silentRelay: Server;
const relayConnections: Socket[] = [];

before(async () => {
  dns = await startDnsServer();
  receiver = await startWebhookReceiver();
  silentRelay = createServer((socket) => relayConnections.push(socket.on('error', () => {})));
  await new Promise<void>((resolve) => silentRelay.listen(0, '127.0.0.1', resolve));
  installation = await createInstallation({
    MAILROOM_API_KEY: API_KEY,
    DNS_SERVERS: dns.address,
    SMTP_RELAY_URL: `smtp://127.0.0.1:${(silentRelay.address() as { port: number }).port}`,
    DELIVERY_LEASE_SECONDS: '1',
    DELIVERY_RETRY_SCALE: '0.001',
  });
  server = await startMailroom(installation.env, API_KEY);
  const domain = await createVerifiedDomain(server.api, dns, 'damaged.test');
  const endpoint = await createWebhookEndpoint(server.api, 'Receiver', { url: receiver.url, retryAttempts: 3 });
  await routeAddress(server.api, ADDRESS, domain.id, { endpointId: endpoint.id });
});
after(async () => {
  await server?.stop('SIGKILL');
  await installation?.remove();
  await receiver?.close();
  for (const socket of relayConnections) socket.destroy();
  silentRelay?.close();
  await dns?.close();
});

/** The segment files of the filesystem store; each process writes a segment of its own. */
async function segments(): Promise<string[]> {
  const entries = await readdir(join(installation.dataDir, 'blobs'), { recursive: true, withFileTypes: true });
  return entries
    .filter((entry) => entry.isFile() && entry.name.endsWith('.seg'))
    .map((e) => join(e.parentPath, e.name));
}

/**
 * Kills the server, puts a directory where the segment holding `emailId`'s message was (so reading it fails with
 * EISDIR), and starts the server again; answers the segment's path.
 */
async function restartWithSegmentUnreadable(emailId: string): Promise<string> {
  const { objectKey } = (await server.api.get(`/api/v2/mail/${emailId}`)).body.processing.s3Info;
  await server.stop('SIGKILL');
  const segment = join(installation.dataDir, 'blobs', objectKey.slice(0, objectKey.lastIndexOf('/')));
  await rm(segment);
  await mkdir(segment);
  server = await startMailroom(installation.env, API_KEY);
  return segment;
}

async function get(path: string) {
  const response = await fetch(`${server.httpUrl}${path}`, { headers: { authorization: `Bearer ${API_KEY}` } });
  return { status: response.status, body: await response.text() };
}

/** What the API answers for an email whose raw message cannot be read back whole. */
async function assertContentNotFound(emailId: string) {
  const notFound = { status: 404, body: JSON.stringify({ error: 'Email content not found' }) };
  assert.deepEqual(await get(`/api/v2/mail/${emailId}/raw`), notFound);
  assert.deepEqual(await get(`/api/v2/attachments/${emailId}/parts/0`), notFound);
  assert.deepEqual(await get(`/api/v2/attachments/${emailId}/report.txt`), notFound);
  assert.deepEqual(await get(`/api/e2/attachments/${emailId}/parts/0`), notFound);
  const detail = await server.api.get(`/api/v2/mail/${emailId}`);
  assert.equal(detail.status, 200, JSON.stringify(detail.body));
  assert.equal(detail.body.content.rawContent, undefined);
  assert.equal(detail.body.content.rawContentOmitted, true);
  assert.deepEqual(
    [detail.body.processing.s3Info.contentFetched, detail.body.processing.s3Info.error],
    [false, 'Email content not found'],
  );
}

test('a segment file cut short at its end: the email whose record it cut answers 404 "Email content not found", never a 200 whose body stops short', async () => {
  const sent = await sendMail({ port: server.smtpPort, to: ADDRESS, subject: 'Cut', attachments: [ATTACHMENT] });
  assert.equal(sent.code, 250, sent.response);
  await waitForDelivery(server.api, sent.queuedIds[0]!);
  assert.equal(await server.stop('SIGTERM'), 0);
  const [segment] = await segments();
  await truncate(segment!, (await stat(segment!)).size - 100);

  server = await startMailroom(installation.env, API_KEY);
  await assertContentNotFound(sent.queuedIds[0]!);
});

test('a segment file gone: its emails answer 404 "Email content not found"; a delivery in flight fails with that error instead of being retried for ever unrecorded', async () => {
  const before = new Set(await segments());
  receiver.answer('hang', { status: 200, body: 'ok' });
  const sent = await sendMail({ port: server.smtpPort, to: ADDRESS, subject: 'Gone', attachments: [ATTACHMENT] });
  assert.equal(sent.code, 250, sent.response);
  const emailId = sent.queuedIds[0]!;
  await receiver.waitForRequests(receiver.requests.length + 1);
  const sentBefore = receiver.requests.length;
  await server.stop('SIGKILL');
  for (const segment of await segments()) if (!before.has(segment)) await rm(segment);

  server = await startMailroom(installation.env, API_KEY);
  const delivery = await waitForDelivery(server.api, emailId);
  assert.deepEqual(
    { status: delivery.status, lastError: delivery.lastError, attempts: delivery.attemptLog.length },
    { status: 'failed', lastError: 'Email content not found', attempts: 0 },
  );
  assert.equal(receiver.requests.length, sentBefore, 'nothing was sent without the message');
  await assertContentNotFound(emailId);
  assert.equal(await server.stop('SIGTERM'), 0);
});

/** The descriptors the server process holds open on `path`. */
function descriptorsOn(path: string): string[] {
  const dir = `/proc/${server.child.pid}/fd`;
  return readdirSync(dir).filter((fd) => {
    try {
      return readlinkSync(join(dir, fd)) === path;
    } catch {
      return false; // closed since the directory was read
    }
  });
}

test('a segment that cannot be read (a directory where its file was): reads of its mail answer 404 and leave no file open, where the handle left to the garbage collector ended the process', async () => {
  // The test before stops the server it started (a SIGKILL finds this one stopped, or stops the one `before` started).
  await server.stop('SIGKILL');
  server = await startMailroom(installation.env, API_KEY);
  const domains = await server.api.get('/api/v2/domains');
  await routeAddress(server.api, 'store@damaged.test', domains.body.data[0].id, {});
  const sent = await sendMail({ port: server.smtpPort, to: 'store@damaged.test', subject: 'Unreadable' });
  assert.equal(sent.code, 250, sent.response);
  const emailId = sent.queuedIds[0]!;
  const segment = await restartWithSegmentUnreadable(emailId);
  for (let read = 0; read < 3; read++) {
    assert.deepEqual(await get(`/api/v2/mail/${emailId}/raw`), {
      status: 404,
      body: JSON.stringify({ error: 'Email content not found' }),
    });
  }
  assert.deepEqual(descriptorsOn(segment), []);
  assert.equal(await server.stop('SIGTERM'), 0);
});

test('a segment that cannot be read (a directory where its file was): each delivery attempt is recorded as "Email content could not be read" and the delivery fails after its retries, instead of being retried for ever unrecorded', async () => {
  // The test before stops the server it started (a SIGKILL finds this one stopped, or stops the one `before` started).
  await server.stop('SIGKILL');
  server = await startMailroom(installation.env, API_KEY);
  receiver.answer('hang', { status: 200, body: 'ok' });
  const sent = await sendMail({ port: server.smtpPort, to: ADDRESS, subject: 'Unreadable' });
  assert.equal(sent.code, 250, sent.response);
  const emailId = sent.queuedIds[0]!;
  await receiver.waitForRequests(receiver.requests.length + 1);
  const sentBefore = receiver.requests.length;
  await restartWithSegmentUnreadable(emailId);
  const delivery = await waitForDelivery(server.api, emailId);
  const unreadable = 'Email content could not be read';
  assert.deepEqual(
    { status: delivery.status, lastError: delivery.lastError, attempts: delivery.attemptLog.map((a) => a.error) },
    { status: 'failed', lastError: unreadable, attempts: [unreadable, unreadable, unreadable, unreadable] },
  );
  assert.equal(receiver.requests.length, sentBefore, 'nothing was sent without the message');
  assert.equal(await server.stop('SIGTERM'), 0);
});

test('a segment that cannot be read: a forward with attachments records "Email content could not be read", not the read error, and fails after its retries', async () => {
  await server.stop('SIGKILL');
  server = await startMailroom(installation.env, API_KEY);
  const domainId = (await server.api.get('/api/v2/domains')).body.data[0].id;
  const endpoint = await createForwardEndpoint(server.api, 'Copy', 'email', { forwardTo: 'copy@elsewhere.test' });
  await routeAddress(server.api, 'forward@damaged.test', domainId, { endpointId: endpoint.id });
  const relayedBefore = relayConnections.length;
  const sent = await sendMail({
    port: server.smtpPort,
    to: 'forward@damaged.test',
    subject: 'Unreadable forward',
    attachments: [ATTACHMENT],
  });
  assert.equal(sent.code, 250, sent.response);
  const emailId = sent.queuedIds[0]!;
  // The first attempt read the message and waits on the relay; the server is stopped under it.
  for (let wait = 0; wait < 800 && relayConnections.length === relayedBefore; wait++) await sleep(25);
  assert.equal(relayConnections.length, relayedBefore + 1);
  await restartWithSegmentUnreadable(emailId);
  const delivery = await waitForDelivery(server.api, emailId);
  const unreadable = 'Email content could not be read';
  assert.deepEqual(
    {
      status: delivery.status,
      lastError: delivery.lastError,
      attempts: delivery.attemptLog.map((a) => [a.error, a.recipients?.map((r) => [r.address, r.status, r.error])]),
    },
    {
      status: 'failed',
      lastError: `copy@elsewhere.test: ${unreadable}`,
      attempts: Array(4).fill([`copy@elsewhere.test: ${unreadable}`, [['copy@elsewhere.test', 'failed', unreadable]]]),
    },
  );
  assert.equal(relayConnections.length, relayedBefore + 1, 'nothing was sent without the message');
  assert.equal(await server.stop('SIGTERM'), 0);
});
