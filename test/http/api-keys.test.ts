import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { startTestApp, TEST_DATABASE_URL, type TestApp } from '../helpers/app.ts';
import { type ApiClient, apiClient } from '../helpers/http.ts';
import { createInstallation, type ServerProcess, startServerProcess } from '../helpers/process.ts';
import { startS3Server } from '../helpers/s3.ts';

let server: TestApp;

before(async () => {
  server = await startTestApp({ DNS_SERVERS: '127.0.0.1:9' });
});
after(() => server.close());

const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;
const UNAUTHORIZED_UNKNOWN = { error: 'Unauthorized', detail: 'Unknown or revoked API key' };

/** A fresh account with one key, and a client for it. */
async function newAccount(name: string): Promise<{ key: string; api: ApiClient }> {
  const key = await server.newAccountKey(name);
  return { key, api: apiClient(server.baseUrl, key) };
}

/** Asserts that `at` is an ISO time no earlier than `since` and no later than now. */
function assertRecent(at: unknown, since: string) {
  assert.match(String(at), ISO);
  assert.ok(String(at) >= since && String(at) <= new Date().toISOString(), `${at} is not between ${since} and now`);
}

describe('API keys over /api/v2/keys', () => {
  test('POST /api/v2/keys: 201 with the key shown once; GET lists both keys without secrets', async () => {
    const { key: firstKey, api } = await newAccount('keys-list');
    const since = new Date().toISOString();
    const created = await api.post('/api/v2/keys');
    assert.equal(created.status, 201);
    assert.deepEqual(Object.keys(created.body), ['id', 'prefix', 'createdAt', 'lastUsedAt', 'revokedAt', 'key']);
    assert.match(created.body.id, /^key_/);
    assert.match(created.body.key, /^mr_[A-Za-z0-9]{40}$/);
    assert.equal(created.body.prefix, created.body.key.slice(0, 11));
    assertRecent(created.body.createdAt, since);
    assert.deepEqual([created.body.lastUsedAt, created.body.revokedAt], [null, null]);

    const listed = await apiClient(server.baseUrl, created.body.key).get('/api/v2/keys');
    assert.equal(listed.status, 200);
    const [first, second] = listed.body.data;
    assert.equal(listed.body.data.length, 2);
    assert.match(first.id, /^key_/);
    assert.match(first.createdAt, ISO);
    assertRecent(first.lastUsedAt, since);
    assertRecent(second.lastUsedAt, since);
    assert.deepEqual(listed.body, {
      data: [
        {
          id: first.id,
          prefix: firstKey.slice(0, 11),
          createdAt: first.createdAt,
          lastUsedAt: first.lastUsedAt,
          revokedAt: null,
        },
        {
          id: created.body.id,
          prefix: created.body.prefix,
          createdAt: created.body.createdAt,
          lastUsedAt: second.lastUsedAt,
          revokedAt: null,
        },
      ],
    });
    assert.equal(JSON.stringify(listed.body).includes(created.body.key), false);
  });

  test('GET /api/v2/keys: lastUsedAt is written once a minute, not on every request', async () => {
    const { api } = await newAccount('keys-last-used');
    const first = (await api.get('/api/v2/keys')).body.data[0].lastUsedAt;
    assert.match(first, ISO);
    const again = (await api.get('/api/v2/keys')).body.data[0].lastUsedAt;
    assert.equal(again, first);
  });

  test("another account's keys are not listed, and revoking one is 404 like an unknown id", async () => {
    const a = await newAccount('keys-owner');
    const b = await newAccount('keys-stranger');
    const [aKey] = (await a.api.get('/api/v2/keys')).body.data;
    const bIds = (await b.api.get('/api/v2/keys')).body.data.map((k: { id: string }) => k.id);
    assert.equal(bIds.length, 1);
    assert.equal(bIds.includes(aKey.id), false);
    for (const id of [aKey.id, 'key_unknown']) {
      const refused = await b.api.delete(`/api/v2/keys/${id}`);
      assert.equal(refused.status, 404);
      assert.deepEqual(refused.body, { error: 'API key not found' });
    }
    assert.equal((await a.api.get('/api/v2/keys')).status, 200);
  });

  test('DELETE /api/v2/keys/{id}: the key is refused on the next request; revoking it again changes nothing', async () => {
    const { api } = await newAccount('keys-revoke');
    const spare = (await api.post('/api/v2/keys')).body;
    const since = new Date().toISOString();
    const revoked = await api.delete(`/api/v2/keys/${spare.id}`);
    assert.equal(revoked.status, 200);
    assertRecent(revoked.body.revokedAt, since);
    assert.deepEqual(revoked.body, {
      id: spare.id,
      prefix: spare.prefix,
      createdAt: spare.createdAt,
      lastUsedAt: null,
      revokedAt: revoked.body.revokedAt,
    });
    const refused = await apiClient(server.baseUrl, spare.key).get('/api/v2/domains');
    assert.equal(refused.status, 401);
    assert.deepEqual(refused.body, UNAUTHORIZED_UNKNOWN);

    const again = await api.delete(`/api/v2/keys/${spare.id}`);
    assert.equal(again.status, 200);
    assert.deepEqual(again.body, revoked.body);
    const listed = (await api.get('/api/v2/keys')).body.data;
    assert.deepEqual(
      listed.map((k: { id: string; revokedAt: string | null }) => [k.id, k.revokedAt]),
      [
        [listed[0].id, null],
        [spare.id, revoked.body.revokedAt],
      ],
    );
  });

  test('DELETE /api/v2/keys/{id}: a key may revoke itself while the account keeps another', async () => {
    const { api: firstApi } = await newAccount('keys-self');
    const second = (await firstApi.post('/api/v2/keys')).body;
    const secondApi = apiClient(server.baseUrl, second.key);
    const revoked = await secondApi.delete(`/api/v2/keys/${second.id}`);
    assert.equal(revoked.status, 200);
    assert.match(revoked.body.revokedAt, ISO);
    assert.deepEqual((await secondApi.get('/api/v2/keys')).body, UNAUTHORIZED_UNKNOWN);
    assert.equal((await firstApi.get('/api/v2/keys')).status, 200);
  });

  test("DELETE /api/v2/keys/{id}: 409 for the account's last active key, which keeps working", async () => {
    const { api } = await newAccount('keys-last');
    const [only] = (await api.get('/api/v2/keys')).body.data;
    const refused = await api.delete(`/api/v2/keys/${only.id}`);
    assert.equal(refused.status, 409);
    assert.deepEqual(refused.body, {
      error: 'Cannot revoke the last active API key of an account: create another key first, or rotate it',
    });
    assert.equal((await api.get('/api/v2/keys')).body.data[0].revokedAt, null);
  });

  test('the OpenAPI document lists the key routes', async () => {
    const document = (await apiClient(server.baseUrl).get('/api/v2/openapi.json')).body;
    assert.deepEqual(Object.keys(document.paths['/api/v2/keys']).sort(), ['get', 'post']);
    assert.deepEqual(Object.keys(document.paths['/api/v2/keys/{id}']), ['delete']);
    assert.deepEqual(
      Object.keys(document.paths['/api/v2/keys'].post.responses['201'].content['application/json'].schema.properties),
      ['id', 'prefix', 'createdAt', 'lastUsedAt', 'revokedAt', 'key'],
    );
  });

  test('a revoked MAILROOM_API_KEY stays revoked when the server restarts with it', async () => {
    const configuredKey = `mr_test_${randomBytes(16).toString('hex')}`;
    const installation = await createInstallation({ MAILROOM_API_KEY: configuredKey, DNS_SERVERS: '127.0.0.1:9' });
    try {
      const first = await startServerProcess(installation.env);
      const configured = apiClient(first.httpUrl, configuredKey);
      const replacement = (await configured.post('/api/v2/keys')).body;
      const [configuredRow] = (await configured.get('/api/v2/keys')).body.data;
      assert.equal((await configured.delete(`/api/v2/keys/${configuredRow.id}`)).status, 200);
      assert.equal(await first.stop(), 0);

      const second = await startServerProcess(installation.env);
      try {
        assert.deepEqual(
          (await apiClient(second.httpUrl, configuredKey).get('/api/v2/domains')).body,
          UNAUTHORIZED_UNKNOWN,
        );
        assert.equal((await apiClient(second.httpUrl, replacement.key).get('/api/v2/domains')).status, 200);
      } finally {
        await second.stop();
      }
    } finally {
      await installation.remove();
    }
  });

  test('a key revoked through one process is refused at once by another on the same PostgreSQL', {
    skip: TEST_DATABASE_URL ? false : 'needs TEST_DATABASE_URL (PostgreSQL)',
  }, async () => {
    const adminKey = `mr_test_${randomBytes(16).toString('hex')}`;
    // Two processes on one installation share an S3 blob store, as each DATA_DIR takes one process.
    const s3 = await startS3Server();
    const installation = await createInstallation({
      ...s3.env,
      MAILROOM_API_KEY: adminKey,
      DNS_SERVERS: '127.0.0.1:9',
    });
    const started: ServerProcess[] = [];
    try {
      // Started inside the try, so that a second start that fails still stops the first.
      for (let n = 0; n < 2; n++) started.push(await startServerProcess(installation.env));
      const [one, two] = started as [ServerProcess, ServerProcess];
      const created = (await apiClient(one.httpUrl, adminKey).post('/api/v2/keys')).body;
      const onTwo = apiClient(two.httpUrl, created.key);
      assert.equal((await onTwo.get('/api/v2/domains')).status, 200);
      const revoked = await apiClient(one.httpUrl, adminKey).delete(`/api/v2/keys/${created.id}`);
      assert.equal(revoked.status, 200);
      const refused = await onTwo.get('/api/v2/domains');
      assert.equal(refused.status, 401);
      assert.deepEqual(refused.body, UNAUTHORIZED_UNKNOWN);
      assert.equal((await apiClient(two.httpUrl, adminKey).get('/api/v2/domains')).status, 200);
    } finally {
      await Promise.all(started.map((server) => server.stop()));
      await installation.remove();
      await s3.close();
    }
  });
});
