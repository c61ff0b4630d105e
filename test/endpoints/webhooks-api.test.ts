import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { startWithTwoAccounts, type TwoAccounts } from '../helpers/accounts.ts';
import type { TestApp } from '../helpers/app.ts';
import type { DnsServer } from '../helpers/dns-server.ts';
import { createVerifiedDomain } from '../helpers/domains.ts';
import { type ApiClient, apiClient } from '../helpers/http.ts';

let world: TwoAccounts;
let dns: DnsServer;
let server: TestApp;
let api: ApiClient;
let other: ApiClient;

before(async () => {
  world = await startWithTwoAccounts();
  ({ dns, server, api, other } = world);
});
after(() => world.close());

const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;
const path = '/api/v2/webhooks';

describe('POST /api/v2/webhooks', () => {
  test('201 with defaults, a 64-hex verification token and zero delivery counters', async () => {
    const created = await api.post(path, { name: ' Legacy ', url: 'https://legacy.example.com/in' });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    const { id, createdAt, updatedAt, userId, verificationToken, ...rest } = created.body;
    assert.match(id, /^whk_[0-9a-z]{26}$/);
    assert.match(createdAt, ISO);
    assert.equal(updatedAt, createdAt);
    assert.match(userId, /^acc_/);
    assert.match(verificationToken, /^[0-9a-f]{64}$/);
    assert.deepEqual(rest, {
      name: 'Legacy',
      url: 'https://legacy.example.com/in',
      secret: null,
      headers: null,
      timeout: 30,
      retryAttempts: 3,
      isActive: true,
      description: null,
      lastUsed: null,
      totalDeliveries: 0,
      successfulDeliveries: 0,
      failedDeliveries: 0,
    });
  });

  test('201 with every field set', async () => {
    const created = await api.post(path, {
      name: 'Full',
      url: 'http://full.example.com/hook',
      secret: 'whsec',
      headers: { 'X-Env': 'prod' },
      timeout: 120,
      retryAttempts: 0,
      isActive: false,
      description: 'everything',
    });
    assert.equal(created.status, 201);
    assert.deepEqual(
      [created.body.secret, created.body.headers, created.body.timeout, created.body.retryAttempts],
      ['whsec', { 'X-Env': 'prod' }, 120, 0],
    );
    assert.deepEqual([created.body.isActive, created.body.description], [false, 'everything']);
  });

  test('400 Missing required fields names name and url', async () => {
    for (const body of [
      {},
      { name: 'x' },
      { url: 'https://x.example.com' },
      { name: ' ', url: 'https://x.example.com' },
    ]) {
      const response = await api.post(path, body);
      assert.equal(response.status, 400, JSON.stringify(body));
      assert.deepEqual(response.body, { error: 'Missing required fields', required: ['name', 'url'] });
    }
    const empty = await api.post(path, undefined, { headers: { 'content-type': 'application/json' }, raw: '' });
    assert.deepEqual(empty.body, { error: 'Missing required fields', required: ['name', 'url'] });
  });

  const invalid: Array<[string, Record<string, unknown>, string]> = [
    ['a non-URL', { url: 'nope' }, 'Invalid webhook URL format'],
    ['a javascript: URL', { url: 'javascript:alert(1)' }, 'Invalid webhook URL format'],
    ['timeout 0', { timeout: 0 }, 'Timeout must be a number between 1 and 300 seconds'],
    ['timeout 301', { timeout: 301 }, 'Timeout must be a number between 1 and 300 seconds'],
    ['retryAttempts 11', { retryAttempts: 11 }, 'Retry attempts must be a number between 0 and 10'],
    ['headers as a string', { headers: 'X: y' }, 'Headers must be an object with string values'],
    [
      'a header value with a line break',
      { headers: { 'X-A': 'v\nX-B: 1' } },
      'Invalid value for header X-A: line breaks and control characters are not allowed',
    ],
  ];
  for (const [title, fields, details] of invalid) {
    test(`400 Invalid configuration for ${title}`, async () => {
      const response = await api.post(path, { name: 'x', url: 'https://x.example.com', ...fields });
      assert.equal(response.status, 400);
      assert.deepEqual(response.body, { error: 'Invalid configuration', details });
    });
  }

  test('the e2 family has no legacy webhooks', async () => {
    const response = await api.get('/api/e2/webhooks');
    assert.equal(response.status, 404);
    assert.deepEqual(response.body, { error: 'Route GET /api/e2/webhooks not found' });
  });
});

describe('GET, PUT and DELETE /api/v2/webhooks', () => {
  test('list is newest first with pagination, and only the account’s own', async () => {
    const lister = apiClient(server.baseUrl, await server.newAccountKey('lister'));
    for (const name of ['one', 'two', 'three']) await lister.post(path, { name, url: `https://${name}.example.com` });
    const all = await lister.get(path);
    assert.deepEqual(
      all.body.data.map((w: { name: string }) => w.name),
      ['three', 'two', 'one'],
    );
    assert.deepEqual(all.body.pagination, { limit: 50, offset: 0, total: 3, hasMore: false });
    const page = await lister.get(`${path}?limit=1&offset=1`);
    assert.deepEqual(
      page.body.data.map((w: { name: string }) => w.name),
      ['two'],
    );
    assert.equal(page.body.pagination.hasMore, true);
    const limit = await lister.get(`${path}?limit=101`);
    assert.equal(limit.status, 400);
    assert.deepEqual(limit.body, { error: 'Limit must be between 1 and 100' });
  });

  test('read returns the created webhook', async () => {
    const created = await api.post(path, { name: 'Read', url: 'https://read.example.com' });
    const read = await api.get(`${path}/${created.body.id}`);
    assert.equal(read.status, 200);
    assert.deepEqual(read.body, created.body);
  });

  test('PUT changes only the fields sent; null clears secret and headers; the token stays', async () => {
    const created = await api.post(path, {
      name: 'Edit',
      url: 'https://edit.example.com',
      secret: 's',
      headers: { 'X-A': '1' },
    });
    const updated = await api.put(`${path}/${created.body.id}`, { timeout: 60, secret: null, headers: null });
    assert.equal(updated.status, 200);
    assert.deepEqual(
      { ...updated.body, updatedAt: created.body.updatedAt },
      { ...created.body, timeout: 60, secret: null, headers: null },
    );
    const renamed = await api.put(`${path}/${created.body.id}`, { name: 'Renamed', isActive: false });
    assert.deepEqual([renamed.body.name, renamed.body.isActive, renamed.body.timeout], ['Renamed', false, 60]);
  });

  test('PUT validates the merged fields', async () => {
    const created = await api.post(path, { name: 'Check', url: 'https://check.example.com' });
    const response = await api.put(`${path}/${created.body.id}`, { retryAttempts: -1 });
    assert.equal(response.status, 400);
    assert.deepEqual(response.body, {
      error: 'Invalid configuration',
      details: 'Retry attempts must be a number between 0 and 10',
    });
    const url = await api.put(`${path}/${created.body.id}`, { url: 'mailto:x@example.com' });
    assert.deepEqual(url.body, { error: 'Invalid configuration', details: 'Invalid webhook URL format' });
  });

  test("404 Webhook not found for unknown ids and another account's webhooks", async () => {
    const created = await api.post(path, { name: 'Mine', url: 'https://mine.example.com' });
    for (const [client, id] of [
      [api, 'whk_unknown'],
      [other, created.body.id],
    ] as const) {
      for (const response of [
        await client.get(`${path}/${id}`),
        await client.put(`${path}/${id}`, { name: 'stolen' }),
        await client.delete(`${path}/${id}`),
      ]) {
        assert.equal(response.status, 404);
        assert.deepEqual(response.body, { error: 'Webhook not found' });
      }
    }
    assert.equal((await api.get(`${path}/${created.body.id}`)).body.name, 'Mine');
  });

  test('DELETE makes addresses routed to it store-only and answers with the cleanup summary', async () => {
    const domain = await createVerifiedDomain(api, dns, 'webhooks.test');
    const created = await api.post(path, { name: 'Gone', url: 'https://gone.example.com' });
    const address = await api.post('/api/v2/email-addresses', {
      address: 'hook@webhooks.test',
      domainId: domain.id,
      webhookId: created.body.id,
    });
    assert.equal(address.body.routing.type, 'webhook');
    const removed = await api.delete(`${path}/${created.body.id}`, {
      headers: { 'content-type': 'application/json' },
      raw: '',
    });
    assert.equal(removed.status, 200);
    assert.deepEqual(removed.body, {
      message: 'Webhook deleted successfully',
      cleanup: { emailAddressesUpdated: 1, emailAddresses: ['hook@webhooks.test'], deliveriesDeleted: 0 },
    });
    const read = await api.get(`/api/v2/email-addresses/${address.body.id}`);
    assert.equal(read.body.webhookId, null);
    assert.equal(read.body.routing.type, 'none');
    assert.equal((await api.get(`${path}/${created.body.id}`)).status, 404);
  });
});
