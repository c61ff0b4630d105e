import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { setTimeout as delay } from 'node:timers/promises';
import pg from 'pg';
import { TEST_DATABASE_URL } from '../helpers/app.ts';
import { apiClient } from '../helpers/http.ts';
import { createInstallation, type ServerProcess, startServerProcess } from '../helpers/process.ts';
import { startPostgresProxy, type TcpProxy } from '../helpers/tcp-proxy.ts';

const API_KEY = 'mr_test_postgres_connection_loss_0123456789';

let installation: Awaited<ReturnType<typeof createInstallation>> | undefined;
let server: ServerProcess | undefined;
let proxy: TcpProxy | undefined;
let locker: pg.Client | undefined;

after(async () => {
  await server?.stop('SIGKILL');
  await locker?.end().catch(() => {});
  await proxy?.close();
  await installation?.remove();
});

test('PostgreSQL drops a connection while a query runs on it: the server lives on and answers once it is back', {
  skip: TEST_DATABASE_URL ? false : 'needs TEST_DATABASE_URL (PostgreSQL)',
}, async () => {
  const relay = await startPostgresProxy(TEST_DATABASE_URL!);
  proxy = relay.proxy;
  installation = await createInstallation({ MAILROOM_API_KEY: API_KEY, DATABASE_URL: relay.url });
  server = await startServerProcess(installation.env);
  const exited = new Promise<number | null>((resolve) => server!.child.once('exit', resolve));
  const api = apiClient(server.httpUrl, API_KEY);
  assert.equal((await api.get('/api/v2/domains')).status, 200);

  // The request's key lookup waits behind this lock, so its query is running when the connections drop.
  locker = new pg.Client({ connectionString: TEST_DATABASE_URL });
  await locker.connect();
  await locker.query('begin');
  await locker.query(`lock table "${installation.env.DATABASE_SCHEMA}".api_keys in access exclusive mode`);
  const waiting = api.get('/api/v2/domains');
  const deadline = Date.now() + 10_000;
  for (;;) {
    const { rows } = await locker.query(
      `select count(*)::int as n from pg_locks where not granted and relation = $1::regclass`,
      [`"${installation.env.DATABASE_SCHEMA}".api_keys`],
    );
    if (rows[0].n > 0) break;
    assert.ok(Date.now() < deadline, 'the request never queried the key');
    await delay(20);
  }
  proxy.cut();
  const answered = await waiting.then(
    (response) => response.status,
    () => 'no answer',
  );
  await locker.query('rollback');
  proxy.restore();

  const alive = await Promise.race([exited.then((code) => `exited with ${code}`), delay(1000, 'alive')]);
  assert.equal(alive, 'alive');
  assert.equal(answered, 503);
  let status = 0;
  for (const until = Date.now() + 15_000; status !== 200 && Date.now() < until; await delay(100)) {
    status = (await api.get('/api/v2/domains')).status;
  }
  assert.equal(status, 200);
});
