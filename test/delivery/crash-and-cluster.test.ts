import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { loadConfig } from '../../src/config/index.ts';
import { openDatabase } from '../../src/db/index.ts';
import { TEST_DATABASE_URL } from '../helpers/app.ts';
import { type DnsServer, startDnsServer } from '../helpers/dns-server.ts';
import { createVerifiedDomain } from '../helpers/domains.ts';
import { freePort } from '../helpers/ports.ts';
import { createInstallation } from '../helpers/process.ts';
import { type S3Server, startS3Server } from '../helpers/s3.ts';
import { sendMail } from '../helpers/smtp.ts';
import { startWebhookReceiver, type WebhookReceiver } from '../helpers/webhook-receiver.ts';
import { type MailroomProcess, startMailroom } from './processes.ts';
import { createWebhookEndpoint, routeAddress, waitForDelivery } from './setup.ts';

const API_KEY = `mr_test_${randomBytes(16).toString('hex')}`;

let dns: DnsServer;
let receiver: WebhookReceiver;
/** The blob store that processes sharing one PostgreSQL share too (each DATA_DIR takes one process). */
let s3: S3Server | undefined;
const running: MailroomProcess[] = [];

before(async () => {
  dns = await startDnsServer();
  receiver = await startWebhookReceiver();
  if (TEST_DATABASE_URL) s3 = await startS3Server();
});
after(async () => {
  for (const process of running) await process.stop('SIGKILL').catch(() => {});
  await receiver.close();
  await dns.close();
  await s3?.close();
});

async function start(env: Record<string, string>) {
  const process = await startMailroom(env, API_KEY);
  running.push(process);
  return process;
}

/** Runs `body` on a fresh installation with this file's key and DNS server, the receiver emptied first. */
async function inInstallation(env: Record<string, string>, body: (env: Record<string, string>) => Promise<void>) {
  receiver.clear();
  const installation = await createInstallation({ MAILROOM_API_KEY: API_KEY, DNS_SERVERS: dns.address, ...env });
  try {
    await body(installation.env);
  } finally {
    await installation.remove();
  }
}

/** Sets up a verified domain, a webhook endpoint to the receiver and an address routed to it. */
async function routeToReceiver(mailroom: MailroomProcess, domain: string) {
  const { id: domainId } = await createVerifiedDomain(mailroom.api, dns, domain);
  const endpoint = await createWebhookEndpoint(mailroom.api, 'Receiver', { url: receiver.url, retryAttempts: 3 });
  const address = `inbox@${domain}`;
  await routeAddress(mailroom.api, address, domainId, { endpointId: endpoint.id });
  return address;
}

describe('delivery survives crashes and shares work across processes', () => {
  test('kill -9 while a webhook is in flight: after restart the delivery completes, with the same webhook-id', async () => {
    await inInstallation(
      {
        DELIVERY_LEASE_SECONDS: '1',
        DELIVERY_RETRY_SCALE: '0.001',
        PORT: String(await freePort()),
        SMTP_PORT: String(await freePort()),
      },
      async (env) => {
        const first = await start(env);
        const address = await routeToReceiver(first, 'crash.test');
        receiver.answer('hang', { status: 200, body: 'ok' });
        const sent = await sendMail({
          port: first.smtpPort,
          from: 'ann@sender.test',
          to: address,
          subject: 'In flight',
        });
        assert.equal(sent.code, 250, sent.response);
        const emailId = sent.queuedIds[0]!;
        await receiver.waitForRequests(1);
        await first.stop('SIGKILL');

        const second = await start(env);
        await receiver.waitForRequests(2, 20_000);
        const delivery = await waitForDelivery(second.api, emailId);
        assert.equal(delivery.status, 'success');
        assert.deepEqual(
          delivery.attemptLog.map((a) => [a.success, a.statusCode]),
          [[true, 200]],
          'the attempt cut short by the crash was never recorded; the one after restart was',
        );
        const [lost, completed] = receiver.requests;
        assert.equal(lost!.headers['webhook-id'], delivery.id);
        assert.equal(completed!.headers['webhook-id'], delivery.id);
        assert.equal(completed!.body.length > 0, true);
        await second.stop();
      },
    );
  });

  test('SIGTERM while a webhook is in flight: the attempt finishes and is recorded before exit, and is not sent again', async () => {
    await inInstallation(
      {
        PORT: String(await freePort()),
        SMTP_PORT: String(await freePort()),
      },
      async (env) => {
        const first = await start(env);
        const address = await routeToReceiver(first, 'graceful.test');
        receiver.answer({ status: 200, body: 'took a while', delayMs: 700 });
        const sent = await sendMail({ port: first.smtpPort, from: 'ann@sender.test', to: address, subject: 'Slow' });
        assert.equal(sent.code, 250, sent.response);
        await receiver.waitForRequests(1);
        assert.equal(await first.stop('SIGTERM'), 0);

        const second = await start(env);
        const delivery = await waitForDelivery(second.api, sent.queuedIds[0]!);
        assert.deepEqual(
          delivery.attemptLog.map((a) => [a.success, a.statusCode, a.responseBody]),
          [[true, 200, 'took a while']],
        );
        assert.equal(receiver.requests.length, 1);
        await second.stop();
      },
    );
  });

  test('SIGTERM with an attempt that outlives the drain: the job is handed back (pending, unleased) and the process exits', async () => {
    await inInstallation(
      {
        DELIVERY_LEASE_SECONDS: '1',
        PORT: String(await freePort()),
        SMTP_PORT: String(await freePort()),
      },
      async (env) => {
        const first = await start(env);
        const address = await routeToReceiver(first, 'handback.test');
        receiver.answer('hang');
        const sent = await sendMail({ port: first.smtpPort, from: 'ann@sender.test', to: address, subject: 'Stuck' });
        assert.equal(sent.code, 250, sent.response);
        await receiver.waitForRequests(1);
        assert.equal(await first.stop('SIGTERM'), 0);

        const handle = await openDatabase(loadConfig(env).database);
        try {
          const job = await handle.db
            .selectFrom('deliveries')
            .select(['status', 'lease_owner', 'attempts'])
            .where('email_id', '=', sent.queuedIds[0]!)
            .executeTakeFirstOrThrow();
          assert.deepEqual({ ...job }, { status: 'pending', lease_owner: null, attempts: 0 });
        } finally {
          await handle.close();
        }
      },
    );
  });

  test('two processes on one PostgreSQL, 500 messages: every one delivered, no webhook-id received twice', {
    skip: TEST_DATABASE_URL ? false : 'needs TEST_DATABASE_URL (PostgreSQL)',
  }, async () => {
    await inInstallation(
      {
        ...s3?.env,
        DELIVERY_CONCURRENCY: '8',
        // Each batch of 25 comes from loopback, about half of it to each process.
        SMTP_MAX_CONNECTIONS_PER_IP: '25',
      },
      async (env) => {
        const one = await start(env);
        const two = await start(env);
        const address = await routeToReceiver(one, 'cluster.test');
        const total = 500;
        const ports = [one.smtpPort, two.smtpPort];
        const queued: string[] = [];
        for (let batch = 0; batch < total; batch += 25) {
          const results = await Promise.all(
            Array.from({ length: 25 }, (_, i) =>
              sendMail({
                port: ports[(batch + i) % 2]!,
                from: 'ann@sender.test',
                to: address,
                subject: `m${batch + i}`,
              }),
            ),
          );
          for (const result of results) {
            assert.equal(result.code, 250, result.response);
            queued.push(result.queuedIds[0]!);
          }
        }
        await receiver.waitForRequests(total, 60_000);
        // The last webhooks have arrived; their rows are marked a moment later, when each answer is recorded.
        let delivered = 0;
        for (let look = 0; look < 200 && delivered < total; look++) {
          if (look > 0) await new Promise((resolve) => setTimeout(resolve, 25));
          delivered = (await one.api.get('/api/v2/deliveries?status=success&limit=1')).body.pagination.total;
        }
        assert.equal(delivered, total);
        const workers = new Set<string>();
        for (let offset = 0; offset < total; offset += 100) {
          const page = await one.api.get(`/api/v2/deliveries?limit=100&offset=${offset}`);
          for (const delivery of page.body.data) workers.add(delivery.responseData.worker);
        }
        assert.equal(workers.size, 2, 'both processes delivered');
        const webhookIds = receiver.requests.map((r) => r.headers['webhook-id']);
        assert.equal(webhookIds.length, total);
        assert.equal(new Set(webhookIds).size, total);
        assert.deepEqual(new Set(receiver.requests.map((r) => r.headers['x-email-id'])), new Set(queued));
        await Promise.all([one.stop(), two.stop()]);
      },
    );
  });

  test('kill -9 of the process holding a webhook mid-attempt: another running process takes it over once the lease ends, with the same webhook-id', {
    skip: TEST_DATABASE_URL ? false : 'needs TEST_DATABASE_URL (PostgreSQL)',
  }, async () => {
    await inInstallation(
      { ...s3?.env, DELIVERY_LEASE_SECONDS: '2', DELIVERY_POLL_SECONDS: '1', DELIVERY_RETRY_SCALE: '0.001' },
      async (env) => {
        const one = await start(env);
        const two = await start(env);
        const address = await routeToReceiver(one, 'takeover.test');
        receiver.answer('hang', { status: 200, body: 'ok' });
        // Mail that process one stores is leased to its own worker at once.
        const sent = await sendMail({ port: one.smtpPort, from: 'ann@sender.test', to: address, subject: 'Held' });
        assert.equal(sent.code, 250, sent.response);
        await receiver.waitForRequests(1);
        await one.stop('SIGKILL');

        await receiver.waitForRequests(2, 20_000);
        const delivery = await waitForDelivery(two.api, sent.queuedIds[0]!);
        assert.equal(delivery.status, 'success');
        assert.deepEqual(
          delivery.attemptLog.map((a) => [a.attempt, a.success, a.statusCode]),
          [[1, true, 200]],
          'the attempt cut short by the kill was never recorded; the one that took over was',
        );
        assert.equal(delivery.responseData!.worker!.split(':')[1], String(two.child.pid));
        assert.deepEqual(
          receiver.requests.map((request) => request.headers['webhook-id']),
          [delivery.id, delivery.id],
        );
        await two.stop();
      },
    );
  });

  test('PostgreSQL LISTEN/NOTIFY: a job queued in one process wakes an idle worker in another (polls set to a minute)', {
    skip: TEST_DATABASE_URL ? false : 'needs TEST_DATABASE_URL (PostgreSQL)',
  }, async () => {
    await inInstallation(
      {
        ...s3?.env,
        DELIVERY_CONCURRENCY: '1',
        DELIVERY_POLL_SECONDS: '60',
        // Heartbeats every second: the job waiting behind the held slot is handed back at the second.
        DELIVERY_LEASE_SECONDS: '3',
      },
      async (env) => {
        try {
          const one = await start(env);
          const two = await start(env);
          const address = await routeToReceiver(one, 'notify.test');
          receiver.answer('hang');
          // All mail goes to process one, whose single slot the first (never answered) request holds; the second job
          // waits there until a heartbeat hands it back. The second request can only come from process two, which
          // hears of the job through NOTIFY and nothing else.
          for (const subject of ['first', 'second']) {
            const sent = await sendMail({ port: one.smtpPort, from: 'ann@sender.test', to: address, subject });
            assert.equal(sent.code, 250, sent.response);
          }
          await receiver.waitForRequests(2, 20_000);
          assert.notEqual(receiver.requests[0]!.headers['webhook-id'], receiver.requests[1]!.headers['webhook-id']);
          await Promise.all([one.stop('SIGKILL'), two.stop('SIGKILL')]);
        } finally {
          await receiver.stop();
          await receiver.restart();
        }
      },
    );
  });
});
