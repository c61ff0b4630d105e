import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { gzipSync } from 'node:zlib';
import { startTestApp, type TestApp } from '../helpers/app.ts';
import { type ApiClient, apiClient } from '../helpers/http.ts';

let server: TestApp;
let api: ApiClient;

before(async () => {
  server = await startTestApp({ DNS_SERVERS: '127.0.0.1:9' });
  api = apiClient(server.baseUrl, server.apiKey);
});
after(() => server.close());

const OFFSET_LISTS = [
  '/api/e2/domains',
  '/api/e2/email-addresses',
  '/api/e2/endpoints',
  '/api/e2/emails',
  '/api/v2/domains',
  '/api/v2/email-addresses',
  '/api/v2/endpoints',
  '/api/v2/webhooks',
  '/api/v2/mail',
  '/api/v2/deliveries',
];

describe('list bounds', () => {
  for (const path of OFFSET_LISTS) {
    test(`GET ${path}: 400 for an offset past the largest exact integer, however it is written`, async () => {
      for (const offset of ['99999999999999999999', '1e300', '9007199254740992']) {
        const response = await api.get(`${path}?offset=${offset}`);
        assert.equal(response.status, 400, `offset=${offset}`);
        assert.deepEqual(response.body, { error: 'Offset must be at most 9007199254740991' }, `offset=${offset}`);
      }
    });

    test(`GET ${path}: 400 with the spec's string for limit=1e300`, async () => {
      const response = await api.get(`${path}?limit=1e300`);
      assert.equal(response.status, 400);
      assert.deepEqual(response.body, { error: 'Limit must be between 1 and 100' });
    });

    test(`GET ${path}: the largest exact offset is an empty page`, async () => {
      const response = await api.get(`${path}?offset=9007199254740991`);
      assert.equal(response.status, 200);
      assert.equal(response.body.pagination.offset, 9007199254740991);
    });
  }

  test("GET /api/e2/mail/threads: 400 with the spec's string for limit=1e300", async () => {
    const response = await api.get('/api/e2/mail/threads?limit=1e300');
    assert.equal(response.status, 400);
    assert.deepEqual(response.body, { error: 'Limit must be between 1 and 100' });
  });
});

const MULTIPART_ROUTES = [
  '/api/e2/domains',
  '/api/v2/domains',
  '/api/e2/email-addresses',
  '/api/v2/email-addresses',
  '/api/v2/deliveries/replay',
];

describe('malformed multipart/form-data', () => {
  const malformed: Array<[string, string, string]> = [
    [
      'without a boundary',
      'multipart/form-data',
      '--x\r\nContent-Disposition: form-data; name="domain"\r\n\r\na\r\n--x--',
    ],
    [
      'cut off inside a part',
      'multipart/form-data; boundary=x',
      '--x\r\nContent-Disposition: form-data; name="domain"\r\n\r\nexample.te',
    ],
    ['with a boundary longer than the parser takes', `multipart/form-data; boundary=${'b'.repeat(300)}`, '--'],
  ];
  for (const path of MULTIPART_ROUTES) {
    for (const [what, contentType, body] of malformed) {
      test(`POST ${path}: 400 for a form ${what}`, async () => {
        const response = await api.post(path, undefined, { raw: body, headers: { 'content-type': contentType } });
        assert.equal(response.status, 400);
        assert.deepEqual(response.body, { error: 'Malformed multipart/form-data body' });
      });
    }
  }
});

describe('NUL characters', () => {
  test('a path id holding NUL is 400 on every database (PostgreSQL cannot compare text with it)', async () => {
    for (const path of ['/api/v2/endpoints/a%00b', '/api/e2/domains/%00/dns-records', '/api/v2/webhooks/%00']) {
      const response = await api.get(path);
      assert.equal(response.status, 400, path);
      assert.deepEqual(response.body, { error: 'Invalid request: params/id must not contain NUL characters' }, path);
    }
  });

  test('a query value holding NUL is 400', async () => {
    const response = await api.get('/api/v2/mail?search=a%00b');
    assert.equal(response.status, 400);
    assert.deepEqual(response.body, { error: 'Invalid request: querystring/search must not contain NUL characters' });
  });

  test('a body string holding NUL, nested or not, is 400', async () => {
    const response = await api.post('/api/v2/webhooks', {
      name: 'nul',
      url: 'http://127.0.0.1:9/',
      headers: { 'x-tag': 'a\u0000' },
    });
    assert.equal(response.status, 400);
    assert.deepEqual(response.body, { error: 'Invalid request: body/headers/x-tag must not contain NUL characters' });
  });

  test('a form field holding NUL is 400', async () => {
    const form = new FormData();
    form.append('domain', 'nul\u0000.example.test');
    const response = await api.post('/api/v2/domains', undefined, { raw: form });
    assert.equal(response.status, 400);
    assert.deepEqual(response.body, { error: 'Invalid request: body/domain must not contain NUL characters' });
  });
});

describe('URLs the router refuses', () => {
  test('a path segment that is not valid percent-encoding is 400 in the API’s shape', async () => {
    const response = await api.get('/api/v2/mail/%ZZ');
    assert.equal(response.status, 400);
    assert.deepEqual(response.body, { error: 'Malformed URL: a path segment is not valid percent-encoding' });
  });

  test('a path segment over 1,024 characters is 414, without the URL echoed back', async () => {
    const response = await api.get(`/api/v2/endpoints/${'x'.repeat(1025)}`);
    assert.equal(response.status, 414);
    assert.deepEqual(response.body, { error: 'A path segment of the URL is too long' });
  });

  test('a 255-character percent-encoded filename reaches its route', async () => {
    const response = await api.get(`/api/e2/attachments/email_none/${encodeURIComponent('é'.repeat(127))}`);
    assert.equal(response.status, 404);
    assert.deepEqual(response.body, { error: 'Email not found or access denied' });
  });
});

describe('Content-Encoding', () => {
  test('a gzip body is 415 naming the coding, with Accept-Encoding: identity', async () => {
    const body = gzipSync(JSON.stringify({ name: 'zipped', url: 'http://127.0.0.1:9/' }));
    const response = await fetch(`${server.baseUrl}/api/v2/webhooks`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${server.apiKey}`,
        'content-type': 'application/json',
        'content-encoding': 'gzip',
      },
      body,
    });
    assert.equal(response.status, 415);
    assert.equal(response.headers.get('accept-encoding'), 'identity');
    assert.deepEqual(await response.json(), { error: 'Unsupported Content-Encoding gzip: send the body uncompressed' });
  });

  test('a plain body labelled gzip is 415 too, not taken as it is', async () => {
    const response = await api.post(
      '/api/v2/webhooks',
      { name: 'mislabelled', url: 'http://127.0.0.1:9/' },
      { headers: { 'content-encoding': 'gzip' } },
    );
    assert.equal(response.status, 415);
    assert.deepEqual((await api.get('/api/v2/webhooks')).body.data, []);
  });

  test('identity is the body as it is', async () => {
    const response = await api.post(
      '/api/v2/webhooks',
      { name: 'identity', url: 'http://127.0.0.1:9/' },
      { headers: { 'content-encoding': 'identity' } },
    );
    assert.equal(response.status, 201);
    assert.equal((await api.delete(`/api/v2/webhooks/${response.body.id}`)).status, 200);
  });
});
