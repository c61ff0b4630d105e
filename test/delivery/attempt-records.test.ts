import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import pg from 'pg';
import { startTestApp, TEST_DATABASE_URL, type TestApp } from '../helpers/app.ts';
import { type DnsServer, startDnsServer } from '../helpers/dns-server.ts';
import { createVerifiedDomain } from '../helpers/domains.ts';
import { eventually } from '../helpers/eventually.ts';
import { type ApiClient, apiClient } from '../helpers/http.ts';
import { sendMail } from '../helpers/smtp.ts';
import { startWebhookReceiver, type WebhookReceiver } from '../helpers/webhook-receiver.ts';
import { createWebhookEndpoint, routeAddress, waitForDelivery } from './setup.ts';

let dns: DnsServer;
let server: TestApp;
let api: ApiClient;
let held: WebhookReceiver;
let prompt: WebhookReceiver;

const skip = TEST_DATABASE_URL ? false : 'needs TEST_DATABASE_URL (PostgreSQL)';

before(async () => {
  if (skip) return;
  dns = await startDnsServer();
  held = await startWebhookReceiver();
  prompt = await startWebhookReceiver();
  server = await startTestApp({ DNS_SERVERS: dns.address, DELIVERY_RETRY_SCALE: '0.001' });
  api = apiClient(server.baseUrl, server.apiKey);
});
after(async () => {
  if (skip) return;
  await held.close();
  await prompt.close();
  await server.close();
  await dns.close();
});

async function send(to: string): Promise<string> {
  const sent = await sendMail({ port: server.smtpPort, from: 'ann@sender.test', to, subject: 'Hello' });
  assert.equal(sent.code, 250, sent.response);
  return sent.queuedIds[0]!;
}

/**
 * How many statements starting with `start` wait for a lock `client`'s transaction holds. Activity statistics are read
 * once per transaction unless cleared.
 */
async function blockedBy(client: pg.Client, start: string): Promise<number> {
  await client.query('select pg_stat_clear_snapshot()');
  const { rows } = await client.query(
    `select count(*)::int as count from pg_stat_activity
      where pg_backend_pid() = any(pg_blocking_pids(pid)) and starts_with(query, $1)`,
    [start],
  );
  return rows[0].count;
}

test('PostgreSQL: an attempt whose record waits for a row lock does not hold up the records of other attempts', {
  skip,
}, async () => {
  const { id: domainId } = await createVerifiedDomain(api, dns, 'records.test');
  for (const [name, receiver] of [
    ['held', held],
    ['prompt', prompt],
  ] as const) {
    const endpoint = await createWebhookEndpoint(api, name, { url: receiver.url });
    await routeAddress(api, `${name}@records.test`, domainId, { endpointId: endpoint.id });
  }
  const { schema } = server.app.config.database as { schema: string };
  const client = new pg.Client({ connectionString: TEST_DATABASE_URL });
  await client.connect();
  try {
    // The first mail's webhook is held by its receiver while its delivery row is locked, as a long transaction of
    // someone else's would; then the receiver drops it, and recording that failed attempt waits for the lock.
    held.answer('hang');
    const first = await send('held@records.test');
    await held.waitForRequests(1);
    await client.query('begin');
    await client.query(`select id from "${schema}".deliveries where email_id = $1 for update`, [first]);
    await held.stop();
    // The statements blocked by this client's transaction that record an attempt (not the lease renewal's): the
    // update that moves a batch's jobs on, in the transaction that then logs the attempts and their events.
    const waitingUpdates = () => blockedBy(client, 'update deliveries set status = job.status');
    for (let look = 0; look < 400 && (await waitingUpdates()) === 0; look++) {
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
    assert.equal(await waitingUpdates(), 1, "the held attempt's record waits for the lock");

    // Another mail's attempt is recorded meanwhile, in the other transaction allowed at once.
    const second = await send('prompt@records.test');
    const delivered = await waitForDelivery(api, second);
    assert.equal(delivered.status, 'success');
    assert.equal(delivered.attempts, 1);

    await client.query('commit');
    held.answer({ status: 200 });
    await held.restart();
    const retried = await waitForDelivery(api, first, (delivery) => delivery.attempts >= 1);
    assert.equal(retried.attemptLog[0]!.success, false);
  } finally {
    await client.end();
  }
});

test('PostgreSQL: a lease renewal passes over a job whose row another transaction holds, rather than waiting for it', {
  skip,
}, async () => {
  // Leases of a second, renewed every third of it: several renewals while the row is held.
  const renewing = await startTestApp({ DNS_SERVERS: dns.address, DELIVERY_LEASE_SECONDS: '1' });
  const hanging = await startWebhookReceiver();
  const client = new pg.Client({ connectionString: TEST_DATABASE_URL });
  await client.connect();
  try {
    const renewingApi = apiClient(renewing.baseUrl, renewing.apiKey);
    const { id: domainId } = await createVerifiedDomain(renewingApi, dns, 'renewals.test');
    const endpoint = await createWebhookEndpoint(renewingApi, 'hanging', { url: hanging.url });
    await routeAddress(renewingApi, 'slow@renewals.test', domainId, { endpointId: endpoint.id });
    hanging.answer('hang');
    const sent = await sendMail({ port: renewing.smtpPort, from: 'ann@sender.test', to: 'slow@renewals.test' });
    assert.equal(sent.code, 250, sent.response);
    await hanging.waitForRequests(1);

    // The job's row held as an attempt's record or an erase holds it, while its webhook is still being sent.
    const { schema } = renewing.app.config.database as { schema: string };
    await client.query('begin');
    await client.query(`select id from "${schema}".deliveries where email_id = $1 for update`, [sent.queuedIds[0]]);
    const leaseExpiry = async () =>
      (
        await client.query(`select lease_expires_at from "${schema}".deliveries where email_id = $1`, [
          sent.queuedIds[0],
        ])
      ).rows[0].lease_expires_at as string;
    const leaseBefore = await leaseExpiry();
    // Three renewals' time: each would have waited for this transaction.
    for (let look = 0; look < 12; look++) {
      assert.equal(
        await blockedBy(client, 'update "deliveries" set "lease_expires_at"'),
        0,
        'no renewal waits for the held row',
      );
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    assert.equal(await leaseExpiry(), leaseBefore, 'the held row was passed over');
    await client.query('commit');

    await eventually(
      async () => (await leaseExpiry()) !== leaseBefore,
      'the released row renewed while the webhook hangs',
    );
  } finally {
    await client.end();
    await hanging.close();
    await renewing.close();
  }
});
