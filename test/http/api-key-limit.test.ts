import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { startTestApp, type TestApp } from '../helpers/app.ts';
import { apiClient } from '../helpers/http.ts';

let server: TestApp;
before(async () => {
  server = await startTestApp({ DNS_SERVERS: '127.0.0.1:9' });
});
after(() => server.close());

test('POST /api/v2/keys: an account holds at most 50 active keys; the next is 403 until one is revoked', async () => {
  const api = apiClient(server.baseUrl, await server.newAccountKey('many-keys'));
  const created: string[] = [];
  for (let count = 1; count < 50; count++) {
    const answer = await api.post('/api/v2/keys');
    assert.equal(answer.status, 201, JSON.stringify(answer.body));
    created.push(answer.body.id);
  }
  const refused = await api.post('/api/v2/keys');
  assert.deepEqual(
    [refused.status, refused.body],
    [403, { error: 'API key limit reached: an account can have at most 50 active keys; revoke one first' }],
  );
  assert.equal((await api.get('/api/v2/keys')).body.data.length, 50);

  assert.equal((await api.delete(`/api/v2/keys/${created[0]}`)).status, 200);
  assert.equal((await api.post('/api/v2/keys')).status, 201);
  assert.equal((await api.post('/api/v2/keys')).status, 403);
  // Another account has its own count.
  const other = apiClient(server.baseUrl, await server.newAccountKey('few-keys'));
  assert.equal((await other.post('/api/v2/keys')).status, 201);
});
