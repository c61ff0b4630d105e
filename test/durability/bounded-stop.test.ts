import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { TEST_DATABASE_URL } from '../helpers/app.ts';
import { createInstallation, type ServerProcess, startServerProcess } from '../helpers/process.ts';
import { startTcpProxy } from '../helpers/tcp-proxy.ts';

const API_KEY = 'mr_test_bounded_stop_key_0123456789';

/** Sends SIGTERM and waits for the exit, for 20 seconds at most; the exit code and the seconds it took. */
async function terminate(server: ServerProcess): Promise<{ code: number | null | 'running'; seconds: number }> {
  const started = performance.now();
  const code = await Promise.race([server.stop('SIGTERM'), sleep(20_000).then(() => 'running' as const)]);
  return { code, seconds: (performance.now() - started) / 1000 };
}

test('SIGTERM on an idle server: exit 0, logging the stop and its end', async () => {
  const installation = await createInstallation({ MAILROOM_API_KEY: API_KEY, LOG_LEVEL: 'info' });
  const server = await startServerProcess(installation.env);
  try {
    const { code, seconds } = await terminate(server);
    assert.equal(code, 0);
    assert.ok(seconds < 10, `exited after ${seconds} s`);
    const stops = server
      .stdout()
      .split('\n')
      .filter((line) => line.startsWith('{'))
      .map((line) => JSON.parse(line))
      .filter((entry) => entry.signal)
      .map(({ level, msg, signal }) => ({ level, msg, signal }));
    assert.deepEqual(stops, [
      { level: 30, msg: 'shutting down', signal: 'SIGTERM' },
      { level: 30, msg: 'mailroom stopped', signal: 'SIGTERM' },
    ]);
  } finally {
    await server.stop('SIGKILL');
    await installation.remove();
  }
});

test('SIGTERM while a request body is still arriving: exit 1 once SHUTDOWN_TIMEOUT_SECONDS has passed', async () => {
  const installation = await createInstallation({
    MAILROOM_API_KEY: API_KEY,
    SHUTDOWN_TIMEOUT_SECONDS: '2',
    // The request's own timeout would end it only after ten minutes.
    HTTP_REQUEST_TIMEOUT_SECONDS: '600',
  });
  const server = await startServerProcess(installation.env);
  const { hostname, port } = new URL(server.httpUrl);
  const client = connect(Number(port), hostname);
  try {
    await new Promise((resolve) => client.once('connect', resolve));
    client.write(
      `POST /api/v2/domains HTTP/1.1\r\nHost: ${hostname}\r\nAuthorization: Bearer ${API_KEY}\r\n` +
        'Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{"domain":',
    );
    await sleep(300);
    const { code, seconds } = await terminate(server);
    assert.equal(code, 1);
    assert.ok(seconds >= 2 && seconds < 10, `exited after ${seconds} s`);
    const logged = server
      .stdout()
      .split('\n')
      .filter((line) => line.startsWith('{'))
      .map((line) => JSON.parse(line))
      .find((entry) => entry.level === 50);
    assert.deepEqual(
      { msg: logged?.msg, timeoutMs: logged?.timeoutMs },
      { msg: 'shutdown took too long: exiting (SHUTDOWN_TIMEOUT_SECONDS)', timeoutMs: 2000 },
    );
  } finally {
    client.destroy();
    await server.stop('SIGKILL');
    await installation.remove();
  }
});

test('SIGTERM while PostgreSQL stops answering: the process still exits, once SHUTDOWN_TIMEOUT_SECONDS has passed', {
  skip: !TEST_DATABASE_URL && 'PostgreSQL only',
}, async () => {
  const direct = new URL(TEST_DATABASE_URL!);
  const proxy = await startTcpProxy({ host: direct.hostname, port: Number(direct.port || 5432) });
  const proxied = new URL(direct);
  proxied.host = `127.0.0.1:${proxy.port}`;
  const installation = await createInstallation({
    MAILROOM_API_KEY: API_KEY,
    SHUTDOWN_TIMEOUT_SECONDS: '2',
    DATABASE_URL: proxied.toString(),
  });
  const server = await startServerProcess(installation.env);
  try {
    proxy.stall();
    const { code, seconds } = await terminate(server);
    assert.equal(code, 1);
    assert.ok(seconds < 10, `exited after ${seconds} s`);
  } finally {
    await server.stop('SIGKILL');
    await proxy.close();
    await installation.remove();
  }
});
