import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { startTestApp, type TestApp } from '../helpers/app.ts';
import { type DnsServer, startDnsServer } from '../helpers/dns-server.ts';
import { createVerifiedDomain } from '../helpers/domains.ts';
import { type ApiClient, apiClient } from '../helpers/http.ts';

let dns: DnsServer;
let server: TestApp;
let api: ApiClient;
let other: ApiClient;
let domain: { id: string; domain: string };
let pending: { id: string; domain: string };
let otherDomain: { id: string; domain: string };

before(async () => {
  dns = await startDnsServer();
  server = await startTestApp({ DNS_SERVERS: dns.address });
  api = apiClient(server.baseUrl, server.apiKey);
  other = apiClient(server.baseUrl, await server.newAccountKey('other'));
  domain = await createVerifiedDomain(api, dns, 'addresses.test');
  pending = (await api.post('/api/v2/domains', { domain: 'pending-addresses.test' })).body;
  otherDomain = await createVerifiedDomain(other, dns, 'other-account.test');
});
after(async () => {
  await server.close();
  await dns.close();
});

const families = ['e2', 'v2'] as const;
const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;

describe('POST /email-addresses', () => {
  for (const family of families) {
    test(`${family}: 201 with the address lower-cased and the full resource`, async () => {
      const created = await api.post(`/api/${family}/email-addresses`, {
        address: ` Sales-${family}@Addresses.TEST `,
        domainId: domain.id,
      });
      assert.equal(created.status, 201, JSON.stringify(created.body));
      const { id, createdAt, updatedAt, ...rest } = created.body;
      assert.match(id, /^addr_[0-9a-z]{26}$/);
      assert.match(createdAt, ISO);
      assert.equal(updatedAt, createdAt);
      assert.deepEqual(rest, {
        address: `sales-${family}@addresses.test`,
        domainId: domain.id,
        webhookId: null,
        endpointId: null,
        isActive: true,
        isReceiptRuleConfigured: true,
        receiptRuleName: null,
        userId: rest.userId,
        domain: { id: domain.id, name: 'addresses.test', status: 'verified' },
        routing: { type: 'none', id: null, name: null, isActive: false },
      });
      assert.match(rest.userId, /^acc_/);
    });

    test(`${family}: 400 Missing required fields lists the missing ones`, async () => {
      const cases: Array<[unknown, string[]]> = [
        [{}, ['address', 'domainId']],
        [{ address: 'x@addresses.test' }, ['domainId']],
        [{ domainId: domain.id, address: '  ' }, ['address']],
      ];
      for (const [body, required] of cases) {
        const response = await api.post(`/api/${family}/email-addresses`, body);
        assert.equal(response.status, 400);
        assert.deepEqual(response.body, { error: 'Missing required fields', required });
      }
      const empty = await api.post(`/api/${family}/email-addresses`, undefined, {
        headers: { 'content-type': 'application/json' },
        raw: '',
      });
      assert.equal(empty.status, 400);
      assert.deepEqual(empty.body, { error: 'Missing required fields', required: ['address', 'domainId'] });
    });

    test(`${family}: 400 Invalid email address format`, async () => {
      for (const address of [
        'no-at-sign',
        'two@@addresses.test',
        'sp ace@addresses.test',
        'a@nodot',
        '@addresses.test',
      ]) {
        const response = await api.post(`/api/${family}/email-addresses`, { address, domainId: domain.id });
        assert.equal(response.status, 400, address);
        assert.deepEqual(response.body, { error: 'Invalid email address format' }, address);
      }
    });

    test(`${family}: 404 Domain not found or access denied for unknown and foreign domains`, async () => {
      for (const domainId of ['dom_unknown', otherDomain.id]) {
        const response = await api.post(`/api/${family}/email-addresses`, {
          address: 'a@other-account.test',
          domainId,
        });
        assert.equal(response.status, 404);
        assert.deepEqual(response.body, { error: 'Domain not found or access denied' });
      }
    });

    test(`${family}: 400 when the address is on another domain than domainId`, async () => {
      for (const address of ['a@elsewhere.test', 'a@sub.addresses.test']) {
        const response = await api.post(`/api/${family}/email-addresses`, { address, domainId: domain.id });
        assert.equal(response.status, 400);
        assert.deepEqual(response.body, { error: 'Email address must belong to domain addresses.test' });
      }
    });

    test(`${family}: 409 Email address already exists, whatever the case`, async () => {
      const address = `dup-${family}@addresses.test`;
      assert.equal((await api.post(`/api/${family}/email-addresses`, { address, domainId: domain.id })).status, 201);
      const again = await api.post(`/api/${family}/email-addresses`, {
        address: address.toUpperCase(),
        domainId: domain.id,
      });
      assert.equal(again.status, 409);
      assert.deepEqual(again.body, { error: 'Email address already exists' });
    });

    test(`${family}: 400 Cannot specify both endpoint and webhook`, async () => {
      const response = await api.post(`/api/${family}/email-addresses`, {
        address: `both-${family}@addresses.test`,
        domainId: domain.id,
        endpointId: 'endp_x',
        webhookId: 'whk_x',
      });
      assert.equal(response.status, 400);
      assert.deepEqual(response.body, { error: 'Cannot specify both endpoint and webhook' });
    });

    test(`${family}: 404 for an unknown endpointId or webhookId`, async () => {
      const address = `unknown-target-${family}@addresses.test`;
      const endpoint = await api.post(`/api/${family}/email-addresses`, {
        address,
        domainId: domain.id,
        endpointId: 'endp_unknown',
      });
      assert.equal(endpoint.status, 404);
      assert.deepEqual(endpoint.body, { error: 'Endpoint not found or access denied' });
      const webhook = await api.post(`/api/${family}/email-addresses`, {
        address,
        domainId: domain.id,
        webhookId: 'whk_unknown',
      });
      assert.equal(webhook.status, 404);
      assert.deepEqual(webhook.body, { error: 'Webhook not found or access denied' });
    });

    test(`${family}: 400 (not 500) for a wrongly typed field`, async () => {
      const response = await api.post(`/api/${family}/email-addresses`, {
        address: `typed-${family}@addresses.test`,
        domainId: domain.id,
        isActive: 'maybe',
      });
      assert.equal(response.status, 400);
      assert.deepEqual(response.body, { error: 'Invalid request: body/isActive must be boolean' });
    });

    test(`${family}: 201 from a urlencoded or multipart form body too`, async () => {
      const form = await api.post(`/api/${family}/email-addresses`, undefined, {
        raw: new URLSearchParams({ address: `form-${family}@addresses.test`, domainId: domain.id, isActive: 'false' }),
      });
      assert.equal(form.status, 201, JSON.stringify(form.body));
      assert.deepEqual([form.body.address, form.body.isActive], [`form-${family}@addresses.test`, false]);
      const multipart = new FormData();
      multipart.set('address', `multipart-${family}@addresses.test`);
      multipart.set('domainId', domain.id);
      const parts = await api.post(`/api/${family}/email-addresses`, undefined, { raw: multipart });
      assert.equal(parts.status, 201, JSON.stringify(parts.body));
      assert.equal(parts.body.isActive, true);
    });

    test(`${family}: an address on an unverified domain is created with a warning and no receipt rule`, async () => {
      const created = await api.post(`/api/${family}/email-addresses`, {
        address: `early-${family}@pending-addresses.test`,
        domainId: pending.id,
      });
      assert.equal(created.status, 201);
      assert.equal(created.body.isReceiptRuleConfigured, false);
      assert.deepEqual(created.body.domain, { id: pending.id, name: 'pending-addresses.test', status: 'pending' });
      assert.equal(
        created.body.warning,
        'Domain pending-addresses.test is not verified yet: mail to this address will be rejected until it is',
      );
    });
  }
});

describe('internationalized domains', () => {
  test('an address on an IDN domain is stored with the domain in punycode, whichever spelling is sent', async () => {
    const idn = await createVerifiedDomain(api, dns, 'bücher.test');
    assert.equal(idn.domain, 'xn--bcher-kva.test');
    const created = await api.post('/api/v2/email-addresses', { address: 'Info@Bücher.test', domainId: idn.id });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    assert.equal(created.body.address, 'info@xn--bcher-kva.test');
    const again = await api.post('/api/e2/email-addresses', { address: 'info@xn--bcher-kva.test', domainId: idn.id });
    assert.equal(again.status, 409);
    assert.deepEqual(
      await server.app.router.resolve('info@bücher.test').then((d) => d.accepted && d.addressId),
      created.body.id,
    );
  });
});

describe('GET, PUT and DELETE /email-addresses/{id}', () => {
  for (const family of families) {
    test(`${family}: read returns the same resource as create`, async () => {
      const created = await api.post(`/api/${family}/email-addresses`, {
        address: `read-${family}@addresses.test`,
        domainId: domain.id,
      });
      const read = await api.get(`/api/${family}/email-addresses/${created.body.id}`);
      assert.equal(read.status, 200);
      assert.deepEqual(read.body, created.body);
    });

    test(`${family}: 404 Email address not found for unknown ids and other accounts' addresses`, async () => {
      const created = await api.post(`/api/${family}/email-addresses`, {
        address: `mine-${family}@addresses.test`,
        domainId: domain.id,
      });
      for (const [client, id] of [
        [api, 'addr_unknown'],
        [other, created.body.id],
      ] as const) {
        for (const response of [
          await client.get(`/api/${family}/email-addresses/${id}`),
          await client.put(`/api/${family}/email-addresses/${id}`, { isActive: false }),
          await client.delete(`/api/${family}/email-addresses/${id}`),
        ]) {
          assert.equal(response.status, 404);
          assert.deepEqual(response.body, { error: 'Email address not found' });
        }
      }
      assert.equal((await api.get(`/api/${family}/email-addresses/${created.body.id}`)).body.isActive, true);
    });

    test(`${family}: PUT isActive false disables receiving with a warning; true re-enables it`, async () => {
      const created = await api.post(`/api/${family}/email-addresses`, {
        address: `toggle-${family}@addresses.test`,
        domainId: domain.id,
      });
      const off = await api.put(`/api/${family}/email-addresses/${created.body.id}`, { isActive: false });
      assert.equal(off.status, 200);
      assert.equal(off.body.isActive, false);
      assert.equal(off.body.isReceiptRuleConfigured, false);
      assert.equal(off.body.warning, 'Email address is inactive: mail to it is rejected until it is activated again');
      const on = await api.put(`/api/${family}/email-addresses/${created.body.id}`, { isActive: true });
      assert.equal(on.body.isActive, true);
      assert.equal(on.body.isReceiptRuleConfigured, true);
      assert.equal(on.body.warning, undefined);
    });

    test(`${family}: PUT with an empty body changes nothing`, async () => {
      const created = await api.post(`/api/${family}/email-addresses`, {
        address: `noop-${family}@addresses.test`,
        domainId: domain.id,
      });
      const updated = await api.put(`/api/${family}/email-addresses/${created.body.id}`, undefined, {
        headers: { 'content-type': 'application/json' },
        raw: '',
      });
      assert.equal(updated.status, 200);
      assert.deepEqual(updated.body, created.body);
    });

    test(`${family}: DELETE answers with the cleanup summary, even with an empty JSON body`, async () => {
      const created = await api.post(`/api/${family}/email-addresses`, {
        address: `gone-${family}@addresses.test`,
        domainId: domain.id,
      });
      const removed = await api.delete(`/api/${family}/email-addresses/${created.body.id}`, {
        headers: { 'content-type': 'application/json' },
        raw: '',
      });
      assert.equal(removed.status, 200);
      assert.deepEqual(removed.body, {
        message: 'Email address deleted successfully',
        cleanup: { emailAddress: `gone-${family}@addresses.test`, domain: 'addresses.test', sesRuleUpdated: false },
      });
      assert.equal((await api.get(`/api/${family}/email-addresses/${created.body.id}`)).status, 404);
    });
  }
});

describe('GET /email-addresses', () => {
  test('filters by domainId, isActive and isReceiptRuleConfigured, newest first, with pagination', async () => {
    const list = apiClient(server.baseUrl, await server.newAccountKey('lister'));
    const mine = await createVerifiedDomain(list, dns, 'list-addresses.test');
    const later = (await list.post('/api/v2/domains', { domain: 'list-later.test' })).body;
    const ids: Record<string, string> = {};
    for (const [address, domainId] of [
      ['a@list-addresses.test', mine.id],
      ['b@list-addresses.test', mine.id],
      ['c@list-later.test', later.id],
    ] as const) {
      ids[address] = (await list.post('/api/e2/email-addresses', { address, domainId })).body.id;
    }
    await list.put(`/api/v2/email-addresses/${ids['b@list-addresses.test']}`, { isActive: false });
    const addressesOf = (body: { data: Array<{ address: string }> }) => body.data.map((a) => a.address);

    const all = await list.get('/api/e2/email-addresses');
    assert.deepEqual(addressesOf(all.body), ['c@list-later.test', 'b@list-addresses.test', 'a@list-addresses.test']);
    assert.deepEqual(all.body.pagination, { limit: 50, offset: 0, total: 3, hasMore: false });
    assert.deepEqual(addressesOf((await list.get(`/api/v2/email-addresses?domainId=${mine.id}`)).body), [
      'b@list-addresses.test',
      'a@list-addresses.test',
    ]);
    assert.deepEqual(addressesOf((await list.get('/api/v2/email-addresses?isActive=false')).body), [
      'b@list-addresses.test',
    ]);
    assert.deepEqual(addressesOf((await list.get('/api/v2/email-addresses?isReceiptRuleConfigured=true')).body), [
      'a@list-addresses.test',
    ]);
    assert.deepEqual(addressesOf((await list.get('/api/e2/email-addresses?isReceiptRuleConfigured=false')).body), [
      'c@list-later.test',
      'b@list-addresses.test',
    ]);
    const page = await list.get('/api/v2/email-addresses?limit=1&offset=1');
    assert.deepEqual(addressesOf(page.body), ['b@list-addresses.test']);
    assert.deepEqual(page.body.pagination, { limit: 1, offset: 1, total: 3, hasMore: true });
  });

  for (const family of families) {
    test(`${family}: 400 for limit outside 1 to 100 and negative offset`, async () => {
      for (const query of ['limit=0', 'limit=101']) {
        const response = await api.get(`/api/${family}/email-addresses?${query}`);
        assert.equal(response.status, 400);
        assert.deepEqual(response.body, { error: 'Limit must be between 1 and 100' });
      }
      const response = await api.get(`/api/${family}/email-addresses?offset=-1`);
      assert.equal(response.status, 400);
      assert.deepEqual(response.body, { error: 'Offset must be non-negative' });
    });
  }

  test("another account's list never shows these addresses", async () => {
    const listed = await other.get('/api/v2/email-addresses?limit=100');
    assert.equal(listed.status, 200);
    assert.deepEqual(listed.body.data, []);
  });
});

describe('isReceiptRuleConfigured follows the domain', () => {
  test('an address created on a pending domain reports true once the domain verifies, without being touched', async () => {
    const created = await api.post('/api/v2/domains', { domain: 'verifies-later.test' });
    const address = await api.post('/api/v2/email-addresses', {
      address: 'hello@verifies-later.test',
      domainId: created.body.id,
    });
    assert.equal(address.body.isReceiptRuleConfigured, false);
    for (const record of created.body.dnsRecords as Array<{ type: string; name: string; value: string }>) {
      if (record.type === 'MX') dns.add(record.name, { type: 'MX', exchange: 'mx.mailroom.test', priority: 10 });
      else if (record.name.startsWith('_mailroom.')) dns.add(record.name, { type: 'TXT', data: record.value });
    }
    assert.equal((await api.get(`/api/v2/domains/${created.body.id}?check=true`)).body.status, 'verified');
    const read = await api.get(`/api/e2/email-addresses/${address.body.id}`);
    assert.equal(read.body.isReceiptRuleConfigured, true);
    assert.equal(read.body.domain.status, 'verified');
    assert.equal(read.body.warning, undefined);
  });
});
