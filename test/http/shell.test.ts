import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { startTestApp, type TestApp } from '../helpers/app.ts';
import { type ApiClient, apiClient } from '../helpers/http.ts';

let server: TestApp;
let api: ApiClient;

before(async () => {
  server = await startTestApp({ DNS_SERVERS: '127.0.0.1:9' });
  api = apiClient(server.baseUrl, server.apiKey);
});
after(() => server.close());

describe('authentication', () => {
  for (const family of ['e2', 'v2']) {
    test(`/api/${family}: 401 Unauthorized without a key`, async () => {
      const response = await apiClient(server.baseUrl).get(`/api/${family}/domains`);
      assert.equal(response.status, 401);
      assert.deepEqual(response.body, {
        error: 'Unauthorized',
        detail: 'Missing Authorization header: send Authorization: Bearer <key>',
      });
      assert.equal(response.headers.get('www-authenticate'), 'Bearer realm="Mailroom"');
    });

    test(`/api/${family}: 401 Unauthorized with an unknown key or another scheme`, async () => {
      const unknown = await apiClient(server.baseUrl, 'mr_not_a_real_key').get(`/api/${family}/domains`);
      assert.equal(unknown.status, 401);
      assert.deepEqual(unknown.body, { error: 'Unauthorized', detail: 'Unknown or revoked API key' });
      const basic = await apiClient(server.baseUrl).get(`/api/${family}/domains`, {
        headers: { authorization: `Basic ${server.apiKey}` },
      });
      assert.equal(basic.status, 401);
    });
  }

  test('the bearer scheme is case-insensitive', async () => {
    const response = await apiClient(server.baseUrl).get('/api/v2/domains', {
      headers: { authorization: `bearer ${server.apiKey}` },
    });
    assert.equal(response.status, 200);
  });

  test('an unknown API route is 404 with or without a key', async () => {
    const response = await apiClient(server.baseUrl).get('/api/v2/nothing-here');
    assert.equal(response.status, 404);
  });
});

describe('error handling', () => {
  test('malformed JSON is 400 with a clear error', async () => {
    const response = await api.post('/api/v2/domains', undefined, {
      raw: '{"domain": ',
      headers: { 'content-type': 'application/json' },
    });
    assert.equal(response.status, 400);
    assert.deepEqual(response.body, { error: 'Malformed JSON in request body' });
  });

  test('an empty JSON body is accepted as no body', async () => {
    const response = await api.post('/api/v2/domains', undefined, {
      raw: '',
      headers: { 'content-type': 'application/json' },
    });
    // The create then says what it misses, as for `{}`.
    assert.equal(response.status, 400);
    assert.deepEqual(response.body, { error: 'Domain is required' });
  });

  test('an unsupported content type is 415', async () => {
    const response = await api.post('/api/v2/domains', undefined, {
      raw: 'domain=x.test',
      headers: { 'content-type': 'text/csv' },
    });
    assert.equal(response.status, 415);
    assert.deepEqual(response.body, { error: 'Unsupported Content-Type' });
  });

  test('JSON sent as a form (curl -d) is 415 telling to send Content-Type: application/json', async () => {
    for (const raw of ['{"domain":"x.test"}', '[{"domain":"x.test"}]', '{"domain":"a=b&c"}']) {
      const response = await api.post('/api/v2/domains', undefined, {
        raw,
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
      });
      assert.equal(response.status, 415, raw);
      assert.deepEqual(response.body, {
        error:
          'Request body is JSON but Content-Type is not: Send JSON bodies with the header Content-Type: application/json',
      });
    }
  });

  test('a real form still creates a domain', async () => {
    const response = await api.post('/api/v2/domains', undefined, {
      raw: 'domain=form-body.test',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    });
    assert.equal(response.status, 201, JSON.stringify(response.body));
    assert.equal(response.body.domain, 'form-body.test');
  });

  test('a body without a Content-Type is 415 telling to send Content-Type: application/json', async () => {
    const response = await fetch(`${server.baseUrl}/api/v2/domains`, {
      method: 'POST',
      headers: { authorization: `Bearer ${server.apiKey}` },
      body: new Blob(['{"domain":"x.test"}']),
    });
    assert.equal(response.status, 415);
    assert.deepEqual(await response.json(), {
      error: 'Request body has no Content-Type: Send JSON bodies with the header Content-Type: application/json',
    });
  });

  test('a body over the limit is 413', async () => {
    const response = await api.post('/api/v2/domains', { domain: 'x'.repeat(3 * 1024 * 1024) });
    assert.equal(response.status, 413);
    assert.deepEqual(response.body, { error: 'Request body is too large' });
  });

  test('an unknown route is 404 with an error body', async () => {
    const response = await api.get('/api/v2/nothing-here');
    assert.equal(response.status, 404);
    assert.deepEqual(response.body, { error: 'Route GET /api/v2/nothing-here not found' });
    const outside = await apiClient(server.baseUrl).get('/nowhere?x=1');
    assert.deepEqual(outside.body, { error: 'Route GET /nowhere not found' });
  });

  test('a prototype-poisoning body is refused with 400', async () => {
    const response = await api.post('/api/v2/domains', undefined, {
      raw: '{"domain":"a.test","__proto__":{"x":1}}',
      headers: { 'content-type': 'application/json' },
    });
    assert.equal(response.status, 400);
  });
});

describe('health and documentation', () => {
  test('GET /healthz and /readyz answer without a key', async () => {
    const client = apiClient(server.baseUrl);
    assert.deepEqual((await client.get('/healthz')).body, { status: 'ok' });
    assert.deepEqual((await client.get('/readyz')).body, { status: 'ready' });
  });

  for (const family of ['e2', 'v2']) {
    test(`GET /api/${family}/openapi.json documents only its family's paths`, async () => {
      const response = await apiClient(server.baseUrl).get(`/api/${family}/openapi.json`);
      assert.equal(response.status, 200);
      assert.equal(response.body.openapi, '3.1.0');
      const paths = Object.keys(response.body.paths);
      assert.ok(paths.includes(`/api/${family}/domains`));
      assert.ok(paths.includes(`/api/${family}/domains/{id}`));
      assert.ok(paths.every((path) => path.startsWith(`/api/${family}/`)));
      const create = response.body.paths[`/api/${family}/domains`].post;
      assert.deepEqual(Object.keys(create.requestBody.content).sort(), [
        'application/json',
        'application/x-www-form-urlencoded',
        'multipart/form-data',
      ]);
      assert.ok(create.responses['201']);
      assert.deepEqual(response.body.components.securitySchemes.bearerAuth, { type: 'http', scheme: 'bearer' });
    });
  }

  test('the OpenAPI documents give downloads the media types they are served with; every other answer is JSON', async () => {
    const served: Record<string, string[]> = {};
    for (const family of ['e2', 'v2']) {
      const { paths } = (await apiClient(server.baseUrl).get(`/api/${family}/openapi.json`)).body as {
        paths: Record<string, Record<string, { responses: Record<string, { content?: Record<string, unknown> }> }>>;
      };
      for (const [path, operations] of Object.entries(paths)) {
        for (const [method, { responses }] of Object.entries(operations)) {
          for (const [status, { content }] of Object.entries(responses)) {
            const types = Object.keys(content ?? {});
            if (types.join() !== 'application/json') served[`${method.toUpperCase()} ${path} ${status}`] = types;
          }
        }
      }
    }
    assert.deepEqual(served, {
      'GET /api/e2/attachments/{emailId}/parts/{idOrIndex} 200': ['*/*'],
      'GET /api/e2/attachments/{emailId}/{filename} 200': ['*/*'],
      'GET /api/v2/attachments/{emailId}/parts/{idOrIndex} 200': ['*/*'],
      'GET /api/v2/attachments/{emailId}/{filename} 200': ['*/*'],
      'GET /api/v2/mail/{id}/raw 200': ['message/rfc822'],
      'GET /api/v2/events 200': ['text/event-stream'],
    });
  });

  test('every operation documents the 401 it answers without a key', async () => {
    const undocumented: string[] = [];
    for (const family of ['e2', 'v2']) {
      const { paths } = (await apiClient(server.baseUrl).get(`/api/${family}/openapi.json`)).body as {
        paths: Record<string, Record<string, { responses: Record<string, unknown> }>>;
      };
      for (const [path, operations] of Object.entries(paths)) {
        for (const [method, { responses }] of Object.entries(operations)) {
          const url = path.replace(/\{[^}]+\}/g, 'x');
          const answer = await apiClient(server.baseUrl).call(method.toUpperCase(), url);
          assert.equal(answer.status, 401, `${method} ${path}`);
          if (!responses['401']) undocumented.push(`${method.toUpperCase()} ${path}`);
        }
      }
    }
    assert.deepEqual(undocumented, []);
  });

  test('the e2 document carries version 2.0.0', async () => {
    const response = await apiClient(server.baseUrl).get('/api/e2/openapi.json');
    assert.equal(response.body.info.version, '2.0.0');
  });

  test('GET /docs renders the reference page', async () => {
    const response = await fetch(`${server.baseUrl}/docs/`);
    assert.equal(response.status, 200);
    assert.match(response.headers.get('content-type') ?? '', /text\/html/);
    assert.match(await response.text(), /swagger-ui/i);
  });
});
