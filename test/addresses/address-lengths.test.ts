import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { startTestApp, type TestApp } from '../helpers/app.ts';
import { type ApiClient, apiClient } from '../helpers/http.ts';

let server: TestApp;
let api: ApiClient;
/** 189 characters: with a 64-octet local part and the `@`, an address of exactly 254. */
const LONG_DOMAIN = `${'a'.repeat(63)}.${'b'.repeat(63)}.${'c'.repeat(56)}.test`;
/** One character longer: the same address is 255. */
const LONGER_DOMAIN = `${'a'.repeat(63)}.${'b'.repeat(63)}.${'c'.repeat(57)}.test`;
const domainIds: Record<string, string> = {};

before(async () => {
  server = await startTestApp({ DNS_SERVERS: '127.0.0.1:9' });
  api = apiClient(server.baseUrl, server.apiKey);
  for (const domain of ['lengths-e2.test', 'lengths-v2.test', LONG_DOMAIN, LONGER_DOMAIN]) {
    const created = await api.post('/api/v2/domains', { domain });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    domainIds[domain] = created.body.id;
  }
  assert.equal(LONG_DOMAIN.length, 189);
});
after(async () => {
  await server.close();
});

const families = ['e2', 'v2'] as const;

describe('POST /email-addresses: RFC 5321 lengths', () => {
  for (const family of families) {
    const domain = `lengths-${family}.test`;
    const create = (address: string, on = domain) =>
      api.post(`/api/${family}/email-addresses`, { address, domainId: domainIds[on] });

    test(`${family}: 400 Invalid email address format for a local part over 64 octets`, async () => {
      for (const local of ['x'.repeat(65), 'y'.repeat(10_000), 'é'.repeat(33)]) {
        const response = await create(`${local}@${domain}`);
        assert.equal(response.status, 400, `${local.length} characters`);
        assert.deepEqual(response.body, { error: 'Invalid email address format' });
      }
    });

    test(`${family}: a local part of exactly 64 octets is accepted`, async () => {
      for (const local of ['x'.repeat(64), 'é'.repeat(32)]) {
        const response = await create(`${local}@${domain}`);
        assert.equal(response.status, 201, JSON.stringify(response.body));
        assert.equal(response.body.address, `${local}@${domain}`);
      }
    });

    test(`${family}: an address of 254 octets is accepted, one of 255 is 400`, async () => {
      const local = `${family}${'z'.repeat(62)}`;
      const longest = await create(`${local}@${LONG_DOMAIN}`, LONG_DOMAIN);
      assert.equal(longest.status, 201, JSON.stringify(longest.body));
      const over = await create(`${local}@${LONGER_DOMAIN}`, LONGER_DOMAIN);
      assert.equal(over.status, 400);
      assert.deepEqual(over.body, { error: 'Invalid email address format' });
    });
  }
});

describe('endpoint forward targets: RFC 5321 lengths', () => {
  const tooLongLocal = `${'x'.repeat(65)}@example.com`;
  const tooLongAddress = `${'x'.repeat(64)}@${LONGER_DOMAIN}`;
  const cases = [
    [{ type: 'email', config: { forwardTo: tooLongLocal } }, 'Invalid forward-to email address format'],
    [{ type: 'email', config: { forwardTo: tooLongAddress } }, 'Invalid forward-to email address format'],
    [
      { type: 'email_group', config: { emails: ['a@example.com', tooLongLocal] } },
      `Invalid email address in group: ${tooLongLocal}`,
    ],
  ] as const;

  for (const family of families) {
    test(`POST /api/${family}/endpoints: 400 Invalid configuration for a forward target over the limits`, async () => {
      for (const [body, details] of cases) {
        const response = await api.post(`/api/${family}/endpoints`, { name: 'too long', ...body });
        assert.equal(response.status, 400, details);
        assert.deepEqual(response.body, { error: 'Invalid configuration', details });
      }
    });
  }

  test('PUT /api/v2/endpoints/{id}: 400 Invalid configuration for a forwardTo over the limits', async () => {
    const created = await api.post('/api/v2/endpoints', {
      name: 'forward',
      type: 'email',
      config: { forwardTo: `${'x'.repeat(64)}@${LONG_DOMAIN}` },
    });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    const response = await api.put(`/api/v2/endpoints/${created.body.id}`, { config: { forwardTo: tooLongLocal } });
    assert.equal(response.status, 400);
    assert.deepEqual(response.body, {
      error: 'Invalid configuration',
      details: 'Invalid forward-to email address format',
    });
  });
});
