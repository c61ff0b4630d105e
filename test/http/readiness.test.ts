import assert from 'node:assert/strict';
import { test } from 'node:test';
import { startTestApp, TEST_DATABASE_URL } from '../helpers/app.ts';
import { startTcpProxy } from '../helpers/tcp-proxy.ts';

test('GET /readyz: 503 within seconds while PostgreSQL stops answering, 200 once it answers again', {
  skip: !TEST_DATABASE_URL && 'PostgreSQL only: a SQLite file does not go away',
}, async () => {
  const direct = new URL(TEST_DATABASE_URL!);
  const proxy = await startTcpProxy({ host: direct.hostname, port: Number(direct.port || 5432) });
  const proxied = new URL(direct);
  proxied.host = `127.0.0.1:${proxy.port}`;
  const server = await startTestApp({ DATABASE_URL: proxied.toString() });
  try {
    assert.equal((await fetch(`${server.baseUrl}/readyz`)).status, 200);
    proxy.stall();
    const started = performance.now();
    const stalled = await fetch(`${server.baseUrl}/readyz`, { signal: AbortSignal.timeout(20_000) });
    const seconds = (performance.now() - started) / 1000;
    assert.equal(stalled.status, 503);
    assert.deepEqual(await stalled.json(), { error: 'Database unavailable' });
    assert.ok(seconds < 5, `answered after ${seconds} s`);
    // Liveness does not ask the database: the process itself is fine.
    assert.equal((await fetch(`${server.baseUrl}/healthz`)).status, 200);
    proxy.resume();
    assert.equal((await fetch(`${server.baseUrl}/readyz`)).status, 200);
  } finally {
    proxy.resume();
    await server.close();
    await proxy.close();
  }
});
