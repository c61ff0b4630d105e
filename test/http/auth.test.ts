import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { startTestApp, type TestApp } from '../helpers/app.ts';
import { apiClient } from '../helpers/http.ts';

let server: TestApp;

before(async () => {
  server = await startTestApp({ DNS_SERVERS: '127.0.0.1:9' });
});
after(() => server.close());

const UNAUTHORIZED_UNKNOWN = { error: 'Unauthorized', detail: 'Unknown or revoked API key' };

describe('401 answers say what is wrong with the credentials', () => {
  for (const family of ['e2', 'v2']) {
    test(`/api/${family}: a missing Authorization header`, async () => {
      const response = await apiClient(server.baseUrl).get(`/api/${family}/domains`);
      assert.equal(response.status, 401);
      assert.deepEqual(response.body, {
        error: 'Unauthorized',
        detail: 'Missing Authorization header: send Authorization: Bearer <key>',
      });
      assert.equal(response.headers.get('www-authenticate'), 'Bearer realm="Mailroom"');
    });

    test(`/api/${family}: a malformed Authorization header (another scheme, Bearer without a key, two words)`, async () => {
      for (const authorization of [`Basic ${server.apiKey}`, 'Bearer', `Bearer ${server.apiKey} extra`]) {
        const response = await apiClient(server.baseUrl).get(`/api/${family}/domains`, { headers: { authorization } });
        assert.equal(response.status, 401, authorization);
        assert.deepEqual(response.body, {
          error: 'Unauthorized',
          detail: 'Malformed Authorization header: expected Bearer <key>',
        });
      }
    });

    test(`/api/${family}: an unknown key, with or without Bearer`, async () => {
      for (const authorization of ['Bearer mr_not_a_real_key', 'mr_not_a_real_key']) {
        const response = await apiClient(server.baseUrl).get(`/api/${family}/domains`, { headers: { authorization } });
        assert.equal(response.status, 401, authorization);
        assert.deepEqual(response.body, UNAUTHORIZED_UNKNOWN);
      }
    });

    test(`/api/${family}: a bare key without Bearer (as the Python SDK sends it) is accepted`, async () => {
      const response = await apiClient(server.baseUrl).get(`/api/${family}/domains`, {
        headers: { authorization: server.apiKey },
      });
      assert.equal(response.status, 200);
    });
  }

  test("GET /api/v2/mail keeps the spec's own error text and adds the detail", async () => {
    const response = await apiClient(server.baseUrl).get('/api/v2/mail');
    assert.equal(response.status, 401);
    assert.deepEqual(response.body, {
      error: 'Invalid or missing API key',
      detail: 'Missing Authorization header: send Authorization: Bearer <key>',
    });
  });
});
