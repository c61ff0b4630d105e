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

const families = ['e2', 'v2'] as const;

describe('POST /domains', () => {
  for (const family of families) {
    test(`${family}: 201 with a lower-cased, trimmed name and the creation shape`, async () => {
      const created = await api.post(`/api/${family}/domains`, { domain: `  Shape-${family}.TEST ` });
      assert.equal(created.status, 201);
      assert.equal(created.body.domain, `shape-${family}.test`);
      assert.match(created.body.id, /^dom_[0-9a-z]{26}$/);
      assert.equal(created.body.status, 'pending');
      assert.equal(created.body.canReceiveEmails, false);
      assert.equal(created.body.hasMxRecords, false);
      assert.equal(created.body.dnsRecords.length, 4);
      assert.deepEqual(created.body.dnsConflict, { hasConflict: false, message: 'No conflicting DNS records found' });
      assert.match(created.body.createdAt, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    });

    test(`${family}: 400 Domain is required when the field is missing or blank`, async () => {
      for (const body of [{}, { domain: '' }, { domain: '   ' }]) {
        const response = await api.post(`/api/${family}/domains`, body);
        assert.equal(response.status, 400);
        assert.deepEqual(response.body, { error: 'Domain is required' });
      }
      // No body at all, labelled JSON, as the v2 SDK sends `domain.create()` without params.
      const bodyless = await api.post(`/api/${family}/domains`, undefined, {
        raw: '',
        headers: { 'content-type': 'application/json' },
      });
      assert.deepEqual([bodyless.status, bodyless.body], [400, { error: 'Domain is required' }]);
    });

    test(`${family}: 400 Invalid domain format for malformed names`, async () => {
      for (const domain of [
        'no-dot',
        'bad..dots.test',
        '-lead.test',
        'under_score.test',
        'a.123',
        'co.uk',
        '1.2.3.4',
        'xn--zz.test',
        'mail.xn--a.test',
      ]) {
        const response = await api.post(`/api/${family}/domains`, { domain });
        assert.equal(response.status, 400, domain);
        assert.deepEqual(response.body, { error: 'Invalid domain format' }, domain);
      }
    });

    test(`${family}: 400 Invalid domain format for a 300-character name`, async () => {
      const domain = `${Array.from({ length: 5 }, () => 'a'.repeat(59)).join('.')}.test`;
      assert.ok(domain.length > 253);
      const response = await api.post(`/api/${family}/domains`, { domain });
      assert.equal(response.status, 400);
      assert.deepEqual(response.body, { error: 'Invalid domain format' });
    });
  }

  test('a 253-character name is accepted', async () => {
    const domain = `${'b'.repeat(63)}.${'c'.repeat(63)}.${'d'.repeat(63)}.${'e'.repeat(56)}.test`;
    assert.equal(domain.length, 253);
    const response = await api.post('/api/v2/domains', { domain });
    assert.equal(response.status, 201);
  });

  test('an internationalised name is stored in its ASCII form', async () => {
    const response = await api.post('/api/v2/domains', { domain: 'bücher.test' });
    assert.equal(response.status, 201);
    assert.equal(response.body.domain, 'xn--bcher-kva.test');
  });

  test('409 when the account already has the domain', async () => {
    await api.post('/api/v2/domains', { domain: 'twice.test' });
    const again = await api.post('/api/e2/domains', { domain: 'TWICE.test' });
    assert.equal(again.status, 409);
    assert.deepEqual(again.body, { error: 'You have already added this domain to your account' });
  });

  test('409 DOMAIN_ALREADY_REGISTERED when another account has the domain', async () => {
    await api.post('/api/v2/domains', { domain: 'taken.test' });
    const response = await other.post('/api/v2/domains', { domain: 'taken.test' });
    assert.equal(response.status, 409);
    assert.deepEqual(response.body, {
      error:
        'This domain is already registered on our platform. If you believe this is an error or you need to transfer ownership, please contact our support team.',
      code: 'DOMAIN_ALREADY_REGISTERED',
    });
  });

  test('the body may be urlencoded or multipart as well as JSON', async () => {
    const urlencoded = await api.post('/api/e2/domains', undefined, {
      raw: new URLSearchParams({ domain: 'form.test' }),
    });
    assert.equal(urlencoded.status, 201);
    assert.equal(urlencoded.body.domain, 'form.test');
    const form = new FormData();
    form.set('domain', 'multipart.test');
    const multipart = await api.post('/api/v2/domains', undefined, { raw: form });
    assert.equal(multipart.status, 201);
    assert.equal(multipart.body.domain, 'multipart.test');
  });

  test('existing MX records elsewhere are reported as a dnsConflict without blocking', async () => {
    dns.set('has-mx.test', [
      { type: 'MX', exchange: 'aspmx.l.google.com', priority: 1 },
      { type: 'MX', exchange: 'mx.mailroom.test', priority: 10 },
    ]);
    const response = await api.post('/api/e2/domains', { domain: 'has-mx.test' });
    assert.equal(response.status, 201);
    assert.deepEqual(response.body.dnsConflict, {
      hasConflict: true,
      conflictType: 'mx',
      message:
        'Domain has 1 MX record(s) - email already configured. Replace them with the MX record below to receive mail with Mailroom.',
      existingRecords: [{ type: 'MX', value: '1 aspmx.l.google.com' }],
    });
  });

  test('a CNAME at the name is reported as a cname conflict', async () => {
    dns.set('alias.test', [{ type: 'CNAME', domain: 'target.example.test' }]);
    const response = await api.post('/api/e2/domains', { domain: 'alias.test' });
    assert.equal(response.body.dnsConflict.conflictType, 'cname');
    assert.deepEqual(response.body.dnsConflict.existingRecords, [{ type: 'CNAME', value: 'target.example.test' }]);
  });
});

describe('GET /domains', () => {
  let pendingId: string;
  let verifiedId: string;
  let lister: ApiClient;

  before(async () => {
    lister = apiClient(server.baseUrl, await server.newAccountKey('lister'));
    pendingId = (await lister.post('/api/v2/domains', { domain: 'list-pending.test' })).body.id;
    verifiedId = (await createVerifiedDomain(lister, dns, 'list-verified.test')).id;
  });

  for (const family of families) {
    test(`${family}: newest first with pagination and capabilities`, async () => {
      const response = await lister.get(`/api/${family}/domains`);
      assert.equal(response.status, 200);
      assert.deepEqual(
        response.body.data.map((d: { id: string }) => d.id),
        [verifiedId, pendingId],
      );
      assert.deepEqual(response.body.pagination, { limit: 50, offset: 0, total: 2, hasMore: false });
      assert.deepEqual(response.body.capabilities, { envelopeRecipients: true });
      assert.deepEqual(response.body.data[0].stats, {
        totalEmailAddresses: 0,
        activeEmailAddresses: 0,
        hasCatchAll: false,
      });
    });

    test(`${family}: status and canReceive filter`, async () => {
      const verified = await lister.get(`/api/${family}/domains?status=verified`);
      assert.deepEqual(
        verified.body.data.map((d: { id: string }) => d.id),
        [verifiedId],
      );
      const cannot = await lister.get(`/api/${family}/domains?canReceive=false`);
      assert.deepEqual(
        cannot.body.data.map((d: { id: string }) => d.id),
        [pendingId],
      );
      assert.equal(cannot.body.pagination.total, 1);
    });

    test(`${family}: limit and offset accept string forms and bound the page`, async () => {
      const page = await lister.get(`/api/${family}/domains?limit=1&offset=1`);
      assert.deepEqual(
        page.body.data.map((d: { id: string }) => d.id),
        [pendingId],
      );
      assert.deepEqual(page.body.pagination, { limit: 1, offset: 1, total: 2, hasMore: false });
      const first = await lister.get(`/api/${family}/domains?limit=1`);
      assert.equal(first.body.pagination.hasMore, true);
    });

    test(`${family}: 400 for limit outside 1 to 100 and a negative offset`, async () => {
      for (const limit of [0, 101]) {
        const response = await lister.get(`/api/${family}/domains?limit=${limit}`);
        assert.equal(response.status, 400);
        assert.deepEqual(response.body, { error: 'Limit must be between 1 and 100' });
      }
      const negative = await lister.get(`/api/${family}/domains?offset=-1`);
      assert.equal(negative.status, 400);
      assert.deepEqual(negative.body, { error: 'Offset must be non-negative' });
      const words = await lister.get(`/api/${family}/domains?limit=ten`);
      assert.equal(words.status, 400);
      assert.deepEqual(words.body, { error: 'Invalid request: querystring/limit must be integer' });
    });

    test(`${family}: 400 for an unknown status value`, async () => {
      const response = await lister.get(`/api/${family}/domains?status=gone`);
      assert.equal(response.status, 400);
      assert.match(response.body.error, /^Invalid request: querystring\/status /);
    });
  }

  test('v2 adds account-wide meta counts', async () => {
    const response = await lister.get('/api/v2/domains?limit=1');
    assert.deepEqual(response.body.meta, {
      totalCount: 2,
      verifiedCount: 1,
      withCatchAllCount: 0,
      statusBreakdown: { pending: 1, verified: 1, failed: 0 },
    });
  });

  test('check=true re-checks each listed domain and adds verificationCheck', async () => {
    const response = await lister.get('/api/e2/domains?check=true');
    assert.equal(response.body.data.length, 2);
    for (const domain of response.body.data) {
      assert.equal(typeof domain.verificationCheck.isFullyVerified, 'boolean');
      assert.equal(domain.verificationCheck.dnsRecords.length, 4);
      assert.equal(domain.verificationCheck.isFullyVerified, domain.id === verifiedId);
    }
  });
});

describe('GET /domains/{id} and dns-records', () => {
  for (const family of families) {
    test(`${family}: the detail carries its DNS records and zeroed stats`, async () => {
      const created = await api.post(`/api/${family}/domains`, { domain: `detail-${family}.test` });
      const response = await api.get(`/api/${family}/domains/${created.body.id}`);
      assert.equal(response.status, 200);
      assert.equal(response.body.domain, `detail-${family}.test`);
      assert.equal(response.body.verificationCheck, undefined);
      assert.equal(response.body.inheritsFromParent, false);
      assert.equal(response.body.parentDomain, null);
      assert.deepEqual(response.body.stats, {
        totalEmailAddresses: 0,
        activeEmailAddresses: 0,
        hasCatchAll: false,
        emailsLast24h: 0,
        emailsLast7d: 0,
        emailsLast30d: 0,
      });
      assert.deepEqual(
        response.body.dnsRecords.map((r: { recordType: string; isRequired: boolean }) => [r.recordType, r.isRequired]),
        [
          ['TXT', true],
          ['MX', true],
          ['TXT', false],
          ['TXT', false],
        ],
      );
    });

    test(`${family}: 404 Domain not found for unknown and foreign ids`, async () => {
      const mine = await api.post(`/api/${family}/domains`, { domain: `private-${family}.test` });
      for (const [client, id] of [
        [api, 'dom_unknown'],
        [other, mine.body.id],
      ] as const) {
        const response = await client.get(`/api/${family}/domains/${id}`);
        assert.equal(response.status, 404);
        assert.deepEqual(response.body, { error: 'Domain not found' });
      }
    });
  }

  test('GET /api/v2/domains/{id}/dns-records lists the records', async () => {
    const created = await api.post('/api/v2/domains', { domain: 'records.test' });
    const response = await api.get(`/api/v2/domains/${created.body.id}/dns-records`);
    assert.equal(response.status, 200);
    assert.equal(response.body.domainId, created.body.id);
    assert.equal(response.body.domain, 'records.test');
    const [first] = response.body.records;
    assert.deepEqual(Object.keys(first).sort(), [
      'createdAt',
      'description',
      'domainId',
      'id',
      'isRequired',
      'isVerified',
      'lastChecked',
      'name',
      'priority',
      'recordType',
      'updatedAt',
      'value',
    ]);
    assert.match(first.id, /^dns_/);
    assert.equal(response.body.records[1].priority, 10);
  });

  test('GET /api/v2/domains/{id}/dns-records: 404 Domain not found for a foreign domain', async () => {
    const created = await api.post('/api/v2/domains', { domain: 'records-private.test' });
    const response = await other.get(`/api/v2/domains/${created.body.id}/dns-records`);
    assert.equal(response.status, 404);
    assert.deepEqual(response.body, { error: 'Domain not found' });
  });
});

describe('subdomains', () => {
  test('a subdomain of a verified parent is verified at once and only needs MX', async () => {
    const parent = await createVerifiedDomain(api, dns, 'parent.test');
    const created = await api.post('/api/e2/domains', { domain: 'mail.parent.test' });
    assert.equal(created.status, 201);
    assert.equal(created.body.status, 'verified');
    assert.equal(created.body.parentDomain, 'parent.test');
    assert.equal(
      created.body.message,
      'Subdomain inherits verification from parent.test. Add the MX record to start receiving email.',
    );
    assert.deepEqual(created.body.dnsRecords, [
      {
        type: 'MX',
        name: 'mail.parent.test',
        value: '10 mx.mailroom.test',
        description: 'Inbound email routing: points mail for the domain at Mailroom',
        isRequired: true,
      },
    ]);
    const detail = await api.get(`/api/v2/domains/${created.body.id}`);
    assert.equal(detail.body.inheritsFromParent, true);
    assert.equal(detail.body.parentDomain, 'parent.test');
    assert.equal(detail.body.canReceiveEmails, false);

    dns.set('mail.parent.test', [{ type: 'MX', exchange: 'mx.mailroom.test', priority: 10 }]);
    const checked = await api.get(`/api/v2/domains/${created.body.id}?check=true`);
    assert.equal(checked.body.canReceiveEmails, true);

    const refused = await api.delete(`/api/v2/domains/${parent.id}`);
    assert.equal(refused.status, 409);
    assert.deepEqual(refused.body, {
      error: 'Cannot delete root domain. This domain has 1 subdomain(s) that depend on it: mail.parent.test',
      code: 'DOMAIN_HAS_DEPENDENT_SUBDOMAINS',
      dependentSubdomains: [{ id: created.body.id, domain: 'mail.parent.test', status: 'verified' }],
    });

    assert.equal((await api.delete(`/api/v2/domains/${created.body.id}`)).status, 200);
    assert.equal((await api.delete(`/api/v2/domains/${parent.id}`)).status, 200);
  });

  test('a subdomain of an unverified parent needs its own verification', async () => {
    await api.post('/api/v2/domains', { domain: 'unverified-parent.test' });
    const created = await api.post('/api/v2/domains', { domain: 'sub.unverified-parent.test' });
    assert.equal(created.body.status, 'pending');
    assert.equal(created.body.dnsRecords.length, 4);
    assert.equal(created.body.parentDomain, undefined);
  });
});

describe('catch-all', () => {
  test('PATCH e2 / PUT v2: 400 when the domain is not verified', async () => {
    const created = await api.post('/api/v2/domains', { domain: 'catchall-pending.test' });
    for (const [method, family] of [
      ['patch', 'e2'],
      ['put', 'v2'],
    ] as const) {
      const response = await api[method](`/api/${family}/domains/${created.body.id}`, {
        isCatchAllEnabled: true,
        catchAllEndpointId: 'endp_x',
      });
      assert.equal(response.status, 400);
      assert.deepEqual(response.body, { error: 'Domain must be verified before configuring catch-all' });
    }
  });

  test('400 Endpoint not found or does not belong to user for an unknown endpoint', async () => {
    const domain = await createVerifiedDomain(api, dns, 'catchall-unknown.test');
    const response = await api.put(`/api/v2/domains/${domain.id}`, {
      isCatchAllEnabled: true,
      catchAllEndpointId: 'endp_missing',
    });
    assert.equal(response.status, 400);
    assert.deepEqual(response.body, { error: 'Endpoint not found or does not belong to user' });
  });

  test('disabling catch-all answers the catch-all shape', async () => {
    const domain = await createVerifiedDomain(api, dns, 'catchall-off.test');
    const response = await api.patch(`/api/e2/domains/${domain.id}`, { isCatchAllEnabled: false });
    assert.equal(response.status, 200);
    assert.deepEqual(
      { ...response.body, updatedAt: undefined },
      {
        id: domain.id,
        domain: 'catchall-off.test',
        status: 'verified',
        isCatchAllEnabled: false,
        catchAllEndpointId: null,
        catchAllEndpoint: null,
        includeSubdomains: false,
        wildcardMxRecord: null,
        updatedAt: undefined,
      },
    );
  });

  test('400 when isCatchAllEnabled is missing', async () => {
    const domain = await createVerifiedDomain(api, dns, 'catchall-missing.test');
    const response = await api.put(`/api/v2/domains/${domain.id}`, {});
    assert.equal(response.status, 400);
    assert.deepEqual(response.body, { error: "Invalid request: body must have required property 'isCatchAllEnabled'" });
  });

  test('404 for a foreign domain', async () => {
    const domain = await createVerifiedDomain(api, dns, 'catchall-foreign.test');
    const response = await other.put(`/api/v2/domains/${domain.id}`, { isCatchAllEnabled: false });
    assert.equal(response.status, 404);
    assert.deepEqual(response.body, { error: 'Domain not found' });
  });
});

describe('DELETE /domains/{id}', () => {
  for (const family of families) {
    test(`${family}: 200 with the deleted resources, then 404`, async () => {
      const created = await api.post(`/api/${family}/domains`, { domain: `delete-${family}.test` });
      const response = await api.delete(`/api/${family}/domains/${created.body.id}`);
      assert.equal(response.status, 200);
      assert.deepEqual(response.body, {
        success: true,
        message: `Successfully deleted domain delete-${family}.test and all associated resources`,
        deletedResources: {
          domain: `delete-${family}.test`,
          emailAddresses: 0,
          dnsRecords: 4,
          blockedEmails: 0,
          sesIdentity: false,
          sesReceiptRules: false,
        },
      });
      const again = await api.delete(`/api/${family}/domains/${created.body.id}`);
      assert.equal(again.status, 404);
      assert.deepEqual(again.body, { error: 'Domain not found' });
    });
  }

  test('another account cannot delete the domain, and it survives', async () => {
    const created = await api.post('/api/v2/domains', { domain: 'keep-me.test' });
    const response = await other.delete(`/api/v2/domains/${created.body.id}`);
    assert.equal(response.status, 404);
    assert.equal((await api.get(`/api/v2/domains/${created.body.id}`)).status, 200);
  });

  test('a deleted domain can be added again', async () => {
    const created = await api.post('/api/v2/domains', { domain: 'readd.test' });
    await api.delete(`/api/v2/domains/${created.body.id}`);
    assert.equal((await other.post('/api/v2/domains', { domain: 'readd.test' })).status, 201);
  });
});
