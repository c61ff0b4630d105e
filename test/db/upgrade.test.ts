import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { Webhook } from 'standardwebhooks';
import { openEventStream, type StreamEvent } from '../events/sse-client.ts';
import { TEST_DATABASE_URL } from '../helpers/app.ts';
import { type DnsServer, startDnsServer } from '../helpers/dns-server.ts';
import { createVerifiedDomain } from '../helpers/domains.ts';
import { type ApiClient, apiClient } from '../helpers/http.ts';
import { checkOutOldCode, hasCommit } from '../helpers/old-code.ts';
import { freePort } from '../helpers/ports.ts';
import { createInstallation, type ServerProcess, startServerProcess } from '../helpers/process.ts';
import { sendMail } from '../helpers/smtp.ts';
import { startWebhookReceiver, type WebhookReceiver } from '../helpers/webhook-receiver.ts';
import { createAddress } from '../smtp/mail-setup.ts';

/** The last commit before the search word rule folded Unicode (schema at migration 0024). */
const OLD_COMMIT = 'f951fa2';
const skip = !hasCommit(OLD_COMMIT) && `needs git history back to ${OLD_COMMIT}`;
const API_KEY = 'mr_test_upgrade_key_0123456789abc';
const SECRET = 'whsec_dXBncmFkZS10ZXN0LXNlY3JldC0wMTIzNDU2Nzg5';

let oldCode: Awaited<ReturnType<typeof checkOutOldCode>> | undefined;
let dns: DnsServer;
let receiver: WebhookReceiver;
let installation: Awaited<ReturnType<typeof createInstallation>>;
let smtpPort: number;
let server: ServerProcess | undefined;
let api: ApiClient;
let sentIds: string[];
/** The events the old code streamed before the upgrade. */
let oldEvents: StreamEvent[];
/**
 * PostgreSQL: another installation's process on the same database (another schema), rebuilding its own search vectors
 * under the lock its version takes, one key for the whole database before each schema had its own.
 */
let otherInstallation: pg.Client | undefined;

/** Starts the old code, or this code when not given, on the installation. */
async function startCode(old?: { command: string[]; dir: string }): Promise<ServerProcess> {
  const started = await startServerProcess(installation.env, 30_000, old ? { command: old.command, cwd: old.dir } : {});
  api = apiClient(started.httpUrl, API_KEY);
  return started;
}

async function eventually<T>(read: () => Promise<T>, done: (value: T) => boolean, ms = 20_000): Promise<T> {
  const until = Date.now() + ms;
  for (;;) {
    const value = await read();
    if (done(value) || Date.now() > until) return value;
    await sleep(200);
  }
}

// One installation built by the old code with mail, a pending delivery and a search index, upgraded once.
before(async () => {
  if (skip) return;
  oldCode = await checkOutOldCode(OLD_COMMIT);
  dns = await startDnsServer();
  receiver = await startWebhookReceiver();
  smtpPort = await freePort();
  installation = await createInstallation({
    DNS_SERVERS: dns.address,
    SMTP_PORT: String(smtpPort),
    MAILROOM_API_KEY: API_KEY,
  });

  server = await startCode(oldCode);
  const domain = await createVerifiedDomain(api, dns, 'upgrade.test');
  const endpoint = await api.post('/api/v2/endpoints', {
    name: 'receiver',
    type: 'webhook',
    config: { url: receiver.url, secret: SECRET },
  });
  assert.equal(endpoint.status, 201, JSON.stringify(endpoint.body));
  await createAddress(api, 'inbox@upgrade.test', domain.id, { endpointId: endpoint.body.id });
  // The receiver is down: each delivery fails its first attempt and waits 5 s for a retry.
  receiver.answer({ status: 503 });
  const stream = await openEventStream(server.httpUrl, API_KEY);
  sentIds = [];
  for (const subject of ['Grüße aus der Straße', 'Quarterly report']) {
    const sent = await sendMail({ port: smtpPort, to: 'inbox@upgrade.test', from: 'a@sender.test', subject });
    assert.equal(sent.ok, true, sent.response);
    sentIds.push(...sent.queuedIds);
  }
  await receiver.waitForRequests(2);
  await sleep(500);
  oldEvents = [...stream.events];
  stream.close();
  assert.equal(await server.stop(), 0);
  server = undefined;
  receiver.clear();

  if (TEST_DATABASE_URL) {
    otherInstallation = new pg.Client({ connectionString: TEST_DATABASE_URL });
    await otherInstallation.connect();
    await otherInstallation.query(`select pg_advisory_lock(hashtext('mailroom search_word_rule'))`);
  }
  server = await startCode();
});
after(async () => {
  await otherInstallation?.end();
  await server?.stop('SIGKILL');
  await installation?.remove();
  await dns?.close();
  await receiver?.close();
  oldCode?.remove();
});

test('mail stored by the old code reads, threads and searches by the new word rule after the upgrade', {
  skip,
}, async () => {
  const list = await api.get('/api/v2/mail?limit=10');
  assert.equal(list.status, 200, JSON.stringify(list.body));
  assert.deepEqual(list.body.emails.map((email: { id: string }) => email.id).sort(), [...sentIds].sort());
  const found = await eventually(
    () => api.get('/api/v2/mail?search=strasse'),
    (answer) => answer.body.emails?.length === 1,
  );
  assert.deepEqual(
    found.body.emails.map((email: { subject: string }) => email.subject),
    ['Grüße aus der Straße'],
  );
  const one = await api.get(`/api/v2/mail/${sentIds[1]}`);
  assert.equal(one.status, 200, JSON.stringify(one.body));
  assert.equal(one.body.subject, 'Quarterly report');
  const detail = await api.get(`/api/e2/emails/${sentIds[1]}`);
  const thread = await api.get(`/api/e2/mail/threads/${detail.body.thread_id}`);
  assert.equal(thread.status, 200, JSON.stringify(thread.body));
  assert.deepEqual(
    thread.body.messages.map((message: { id: string }) => message.id),
    [sentIds[1]],
  );
});

test('deliveries left pending by the old code are delivered by the new one, signed with the stored secret', {
  skip,
}, async () => {
  await receiver.waitForRequests(2, 20_000);
  for (const request of receiver.requests.slice(0, 2)) {
    const payload = new Webhook(SECRET).verify(request.body, request.headers as Record<string, string>) as {
      email: { id: string };
    };
    assert.ok(sentIds.includes(payload.email.id));
  }
  const delivered = await eventually(
    () => api.get('/api/v2/deliveries?limit=10'),
    (answer) => answer.body.data?.every((delivery: { status: string }) => delivery.status === 'success'),
  );
  assert.deepEqual(
    delivered.body.data.map((delivery: { status: string }) => delivery.status),
    ['success', 'success'],
  );
});

test('an event stream resumes on the new code from an event the old code streamed', { skip }, async () => {
  const stream = await openEventStream(server!.httpUrl, API_KEY, oldEvents[0]!.id);
  try {
    const resumed = await stream.waitFor(oldEvents.length - 1);
    assert.deepEqual(
      resumed.map((event) => [event.id, event.event]),
      oldEvents.slice(1).map((event) => [event.id, event.event]),
    );
  } finally {
    stream.close();
  }
});
