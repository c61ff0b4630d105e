import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, test } from 'node:test';
import pg from 'pg';
import { TEST_DATABASE_URL } from '../helpers/app.ts';
import { type DnsServer, startDnsServer } from '../helpers/dns-server.ts';
import { createVerifiedDomain } from '../helpers/domains.ts';
import { type ApiClient, apiClient } from '../helpers/http.ts';
import { freePort } from '../helpers/ports.ts';
import { createInstallation, type ServerProcess, startServerProcess } from '../helpers/process.ts';
import { sendMail } from '../helpers/smtp.ts';
import { createAddress } from '../smtp/mail-setup.ts';

/**
 * A server's PostgreSQL pools as PostgreSQL sees them. The server runs with its own `application_name`, so that its
 * connections can be told from every other test's.
 */
const API_KEY = 'mr_test_postgres_pools_key_0123456789';
const APPLICATION = `mailroom_pools_${randomBytes(4).toString('hex')}`;
/** The test installation's DATABASE_POOL_SIZE. */
const POOL_SIZE = 4;
/** Ingest's writer thread commits two transactions at a time and keeps a connection for each. */
const WRITER_CONNECTIONS = 2;

let dns: DnsServer;
let installation: Awaited<ReturnType<typeof createInstallation>>;
let server: ServerProcess;
let api: ApiClient;
let smtpPort: number;
let observer: pg.Client;

before(async () => {
  if (!TEST_DATABASE_URL) return;
  dns = await startDnsServer();
  smtpPort = await freePort();
  const url = new URL(TEST_DATABASE_URL);
  url.searchParams.set('application_name', APPLICATION);
  installation = await createInstallation({
    DNS_SERVERS: dns.address,
    SMTP_PORT: String(smtpPort),
    MAILROOM_API_KEY: API_KEY,
    DATABASE_URL: url.toString(),
  });
  assert.equal(installation.env.DATABASE_POOL_SIZE, String(POOL_SIZE));
  server = await startServerProcess(installation.env);
  observer = new pg.Client({ connectionString: TEST_DATABASE_URL });
  await observer.connect();
  api = apiClient(server.httpUrl, API_KEY);
  const domain = await createVerifiedDomain(api, dns, 'pools.test');
  await createAddress(api, 'inbox@pools.test', domain.id);
});
after(async () => {
  await server?.stop('SIGKILL');
  await observer?.end();
  await installation?.remove();
  await dns?.close();
});

/** The server's connections other than its NOTIFY listeners, which hold a connection of their own each. */
async function pooledConnections(): Promise<number> {
  const { rows } = await observer.query<{ connections: number }>(
    `select count(*)::int as connections from pg_stat_activity where application_name = $1 and query not like 'LISTEN %'`,
    [APPLICATION],
  );
  return rows[0]!.connections;
}

test('a server opens its pools at start and keeps them open while idle', { skip: !TEST_DATABASE_URL }, async () => {
  // No mail is sent, so only the start opens the writer's. Its thread opens them as it starts, which on a loaded
  // machine can follow the HTTP listener by seconds.
  const deadline = Date.now() + 15_000;
  let opened = await pooledConnections();
  while (opened !== POOL_SIZE + WRITER_CONNECTIONS && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 100));
    opened = await pooledConnections();
  }
  assert.equal(opened, POOL_SIZE + WRITER_CONNECTIONS);
  // Past the pool's idle timeout (10 s), which closes the connections it does not keep.
  await new Promise((resolve) => setTimeout(resolve, 10_500));
  assert.equal(await pooledConnections(), POOL_SIZE + WRITER_CONNECTIONS);
});

test('a server goes on when PostgreSQL ends its idle connections', { skip: !TEST_DATABASE_URL }, async () => {
  const ended = await observer.query<{ pid: number }>(
    `select pid, pg_terminate_backend(pid) from pg_stat_activity where application_name = $1 and state = 'idle'`,
    [APPLICATION],
  );
  assert.ok(ended.rowCount! > 0);
  // pg_terminate_backend only signals: a request sent at once can take a connection whose backend has not yet said
  // it is ending, and fail with it. The test is of the connections PostgreSQL has ended, so it waits for their end and
  // for the server to have heard of it.
  const endedPids = ended.rows.map((row) => row.pid);
  const deadline = Date.now() + 10_000;
  while (Date.now() < deadline && ((await stillRunning(endedPids)) > 0 || lostConnectionWarnings().length === 0)) {
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  assert.equal(await stillRunning(endedPids), 0);

  const domains = await api.get('/api/v2/domains');
  assert.equal(domains.status, 200, JSON.stringify(domains.body));
  const sent = await sendMail({ port: smtpPort, to: 'inbox@pools.test', subject: 'After the restart' });
  assert.equal(sent.ok, true, sent.response);
  const mail = await api.get('/api/v2/mail');
  assert.equal(mail.status, 200, JSON.stringify(mail.body));
  assert.deepEqual(
    mail.body.emails.map((email: { subject: string }) => email.subject),
    ['After the restart'],
  );
  assert.equal(server.child.exitCode, null);
  // Each lost connection is logged once with what PostgreSQL said, not with the connection object pg-pool attaches.
  const warnings = lostConnectionWarnings();
  assert.ok(warnings.length > 0);
  for (const err of warnings) {
    assert.deepEqual(
      [err.message, err.code, err.client],
      ['terminating connection due to administrator command', '57P01', undefined],
    );
  }
});

async function stillRunning(pids: number[]): Promise<number> {
  const { rows } = await observer.query<{ running: number }>(
    'select count(*)::int as running from pg_stat_activity where pid = any($1)',
    [pids],
  );
  return rows[0]!.running;
}

function lostConnectionWarnings(): Array<{ message: string; code: string; client?: unknown }> {
  return server
    .stdout()
    .split('\n')
    .filter((line) => line.includes('PostgreSQL closed an idle pooled connection'))
    .map((line) => JSON.parse(line).err);
}
