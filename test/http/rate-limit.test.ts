import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { startTestApp, type TestApp } from '../helpers/app.ts';
import { manualClock } from '../helpers/clock.ts';
import { type ApiClient, apiClient } from '../helpers/http.ts';

const clock = manualClock();
let server: TestApp;
let api: ApiClient;

before(async () => {
  server = await startTestApp({ API_RATE_LIMIT_PER_MINUTE: '3' }, { clock });
  api = apiClient(server.baseUrl, server.apiKey);
});
after(() => server.close());

function limited(retryAfterSeconds: number) {
  return {
    status: 429,
    retryAfter: String(retryAfterSeconds),
    body: {
      error: 'Rate limit exceeded',
      detail: `At most 3 requests per minute per API key; retry in ${retryAfterSeconds} seconds`,
    },
  };
}

describe('API_RATE_LIMIT_PER_MINUTE: requests per API key in a one-minute window', () => {
  test('the 4th request of a minute is 429 with Retry-After, in both API families; the next minute is open again', async () => {
    assert.equal((await api.get('/api/v2/domains')).status, 200);
    assert.equal((await api.get('/api/v2/endpoints')).status, 200);
    assert.equal((await api.get('/api/e2/domains')).status, 200);

    const fourth = await api.get('/api/e2/domains');
    assert.deepEqual(
      { status: fourth.status, retryAfter: fourth.headers.get('retry-after'), body: fourth.body },
      limited(60),
    );
    clock.advanceSeconds(45);
    const later = await api.get('/api/v2/domains');
    assert.deepEqual(
      { status: later.status, retryAfter: later.headers.get('retry-after'), body: later.body },
      limited(15),
    );

    clock.advanceSeconds(15);
    const reset = await api.get('/api/v2/domains');
    assert.equal(reset.status, 200);
    assert.equal(reset.headers.get('retry-after'), null);
  });

  test('each key has its own count, and a request without a valid key is answered 401, not counted', async () => {
    const other = apiClient(server.baseUrl, await server.newAccountKey('other'));
    for (let request = 1; request <= 3; request++) assert.equal((await other.get('/api/v2/domains')).status, 200);
    assert.equal((await other.get('/api/v2/domains')).status, 429);
    // The default key's window (opened by the previous test's last request) still has room.
    assert.equal((await api.get('/api/v2/domains')).status, 200);

    const anonymous = apiClient(server.baseUrl);
    for (let request = 1; request <= 5; request++) assert.equal((await anonymous.get('/api/v2/domains')).status, 401);
    const healthz = await anonymous.get('/healthz');
    assert.equal(healthz.status, 200);
  });
});
