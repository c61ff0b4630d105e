import assert from 'node:assert/strict';
import { test } from 'node:test';
import { apiClient } from '../helpers/http.ts';
import { createInstallation, startServerProcess } from '../helpers/process.ts';

const API_KEY = 'mr_test_access_log_0123456789';

test("each answered request is one info line with its status and key's account; health probes and scrapes are not", async () => {
  const installation = await createInstallation({ LOG_LEVEL: 'info', MAILROOM_API_KEY: API_KEY });
  const server = await startServerProcess(installation.env);
  try {
    const api = apiClient(server.httpUrl, API_KEY);
    assert.equal((await fetch(`${server.httpUrl}/healthz`)).status, 200);
    assert.equal((await fetch(`${server.httpUrl}/readyz?from=balancer`)).status, 200);
    assert.equal((await api.get('/metrics')).status, 200);
    assert.equal((await api.get('/api/v2/domains?limit=5')).status, 200);
    assert.equal((await apiClient(server.httpUrl, 'mr_wrong').get('/api/v2/domains')).status, 401);
    assert.equal((await api.get('/api/v2/no-such-route')).status, 404);
    assert.equal((await api.get('/api/v2/domains')).status, 200);
    // pino writes asynchronously: wait for the fourth line.
    let lines: Array<Record<string, unknown>> = [];
    for (let wait = 0; wait < 50 && lines.length < 4; wait++) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      lines = server
        .stdout()
        .split('\n')
        .filter((line) => line.startsWith('{'))
        .map((line) => JSON.parse(line))
        .filter((entry) => entry.msg === 'request completed');
    }
    const accountId = lines[0]?.accountId;
    assert.match(String(accountId), /^acc_/);
    assert.deepEqual(
      lines.map(({ level, method, url, statusCode, clientIp, accountId }) => ({
        level,
        method,
        url,
        statusCode,
        clientIp,
        accountId,
      })),
      [
        { level: 30, method: 'GET', url: '/api/v2/domains?limit=5', statusCode: 200, clientIp: '127.0.0.1', accountId },
        {
          level: 30,
          method: 'GET',
          url: '/api/v2/domains',
          statusCode: 401,
          clientIp: '127.0.0.1',
          accountId: undefined,
        },
        {
          level: 30,
          method: 'GET',
          url: '/api/v2/no-such-route',
          statusCode: 404,
          clientIp: '127.0.0.1',
          accountId: undefined,
        },
        { level: 30, method: 'GET', url: '/api/v2/domains', statusCode: 200, clientIp: '127.0.0.1', accountId },
      ],
    );
    for (const line of lines) assert.equal(typeof line.responseTimeMs, 'number');
  } finally {
    await server.stop('SIGKILL');
    await installation.remove();
  }
});
