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
let verified: { id: string; domain: string };

before(async () => {
  dns = await startDnsServer();
  server = await startTestApp({ DNS_SERVERS: dns.address });
  api = apiClient(server.baseUrl, server.apiKey);
  other = apiClient(server.baseUrl, await server.newAccountKey('other'));
  verified = await createVerifiedDomain(api, dns, 'endpoints.test');
  await api.post('/api/v2/domains', { domain: 'pending-endpoints.test' });
  await createVerifiedDomain(other, dns, 'not-mine.test');
});
after(async () => {
  await server.close();
  await dns.close();
});

const families = ['e2', 'v2'] as const;
const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;
const ZERO_STATS = { total: 0, successful: 0, failed: 0, lastDelivery: null };
const webhook = (config: Record<string, unknown> = {}) => ({
  name: 'Hook',
  type: 'webhook',
  config: { url: 'https://hooks.example.com/in', ...config },
});

describe('POST /endpoints', () => {
  for (const family of families) {
    const path = `/api/${family}/endpoints`;

    test(`${family}: 201 webhook endpoint with defaults, a 64-hex verification token and zeroed stats`, async () => {
      const created = await api.post(path, {
        name: '  Orders hook ',
        type: 'webhook',
        description: 'orders',
        config: { url: 'https://hooks.example.com/orders', secret: 's3cret', headers: { 'X-Team': 'orders' } },
      });
      assert.equal(created.status, 201, JSON.stringify(created.body));
      const { id, createdAt, updatedAt, userId, config, ...rest } = created.body;
      assert.match(id, /^endp_[0-9a-z]{26}$/);
      assert.match(createdAt, ISO);
      assert.equal(updatedAt, createdAt);
      assert.match(userId, /^acc_/);
      const { verificationToken, ...settings } = config;
      assert.match(verificationToken, /^[0-9a-f]{64}$/);
      assert.deepEqual(settings, {
        url: 'https://hooks.example.com/orders',
        secret: 's3cret',
        headers: { 'X-Team': 'orders' },
        timeout: 30,
        retryAttempts: 3,
      });
      assert.deepEqual(rest, {
        name: 'Orders hook',
        type: 'webhook',
        isActive: true,
        description: 'orders',
        groupEmails: null,
        deliveryStats: ZERO_STATS,
      });
    });

    test(`${family}: 201 email endpoint, with includeAttachments defaulting to true`, async () => {
      const created = await api.post(path, {
        name: 'Forward',
        type: 'email',
        config: { forwardTo: 'Team@Example.com', subjectPrefix: '[fwd]', senderName: 'Mailroom' },
      });
      assert.equal(created.status, 201);
      assert.deepEqual(created.body.config, {
        forwardTo: 'team@example.com',
        includeAttachments: true,
        subjectPrefix: '[fwd]',
        senderName: 'Mailroom',
        email: 'team@example.com',
      });
      assert.equal(created.body.groupEmails, null);
      assert.equal(created.body.description, null);
    });

    test(`${family}: 201 email endpoint from \`email\` (the @inboundemail/sdk spelling), answered with both names`, async () => {
      const created = await api.post(path, { name: 'Alias', type: 'email', config: { email: 'alias@example.com' } });
      assert.equal(created.status, 201);
      const config = { forwardTo: 'alias@example.com', includeAttachments: true, email: 'alias@example.com' };
      assert.deepEqual(created.body.config, config);
      assert.deepEqual((await api.get(`${path}/${created.body.id}`)).body.config, config);
      const listed = await api.get(`${path}?type=email&limit=100`);
      assert.deepEqual(listed.body.data.find((e: { id: string }) => e.id === created.body.id).config, config);
      const updated = await api.put(`${path}/${created.body.id}`, { config: { forwardTo: 'Other@Example.com' } });
      assert.deepEqual(updated.body.config, {
        forwardTo: 'other@example.com',
        includeAttachments: true,
        email: 'other@example.com',
      });
    });

    test(`${family}: a timeout above 300 that is whole seconds in milliseconds is stored as seconds`, async () => {
      for (const [sent, stored] of [
        [30000, 30],
        [1000, 1],
        [300000, 300],
        [300, 300],
      ]) {
        const created = await api.post(path, webhook({ timeout: sent }));
        assert.equal(created.status, 201, String(sent));
        assert.equal(created.body.config.timeout, stored);
        assert.equal((await api.get(`${path}/${created.body.id}`)).body.config.timeout, stored);
      }
    });

    test(`${family}: 201 email endpoint whose fromAddress is on a verified domain of the account`, async () => {
      const created = await api.post(path, {
        name: 'From',
        type: 'email',
        config: { forwardTo: 'a@example.com', fromAddress: 'Relay@Endpoints.test', includeAttachments: false },
      });
      assert.equal(created.status, 201);
      assert.deepEqual(created.body.config, {
        forwardTo: 'a@example.com',
        includeAttachments: false,
        fromAddress: 'relay@endpoints.test',
        email: 'a@example.com',
      });
    });

    test(`${family}: 201 email_group endpoint with groupEmails`, async () => {
      const created = await api.post(path, {
        name: 'Group',
        type: 'email_group',
        config: { emails: ['a@example.com', 'B@example.com'] },
      });
      assert.equal(created.status, 201);
      assert.deepEqual(created.body.config, { emails: ['a@example.com', 'b@example.com'], includeAttachments: true });
      assert.deepEqual(created.body.groupEmails, ['a@example.com', 'b@example.com']);
    });

    test(`${family}: 400 Missing required fields names name, type and config`, async () => {
      for (const body of [
        {},
        { type: 'webhook', config: { url: 'https://x.example.com' } },
        { name: 'x', config: { url: 'https://x.example.com' } },
        { name: 'x', type: 'webhook' },
        { name: '', type: 'webhook', config: { url: 'https://x.example.com' } },
      ]) {
        const response = await api.post(path, body);
        assert.equal(response.status, 400, JSON.stringify(body));
        assert.deepEqual(response.body, { error: 'Missing required fields', required: ['name', 'type', 'config'] });
      }
      const empty = await api.post(path, undefined, { headers: { 'content-type': 'application/json' }, raw: '' });
      assert.equal(empty.status, 400);
      assert.deepEqual(empty.body, { error: 'Missing required fields', required: ['name', 'type', 'config'] });
    });

    test(`${family}: 400 Invalid endpoint type lists the valid types`, async () => {
      const response = await api.post(path, { name: 'x', type: 'sms', config: {} });
      assert.equal(response.status, 400);
      assert.deepEqual(response.body, {
        error: 'Invalid endpoint type',
        validTypes: ['webhook', 'email', 'email_group'],
      });
    });

    const invalid: Array<[string, Record<string, unknown>, string]> = [
      ['webhook without url', { type: 'webhook', config: { timeout: 10 } }, 'Webhook URL is required'],
      ['webhook with a non-URL', { type: 'webhook', config: { url: 'not a url' } }, 'Invalid webhook URL format'],
      [
        'webhook with ftp://',
        { type: 'webhook', config: { url: 'ftp://files.example.com' } },
        'Invalid webhook URL format',
      ],
      ['timeout 0', webhook({ timeout: 0 }), 'Timeout must be a number between 1 and 300 seconds'],
      ['timeout 301', webhook({ timeout: 301 }), 'Timeout must be a number between 1 and 300 seconds'],
      ['timeout "30"', webhook({ timeout: '30' }), 'Timeout must be a number between 1 and 300 seconds'],
      ['timeout 500', webhook({ timeout: 500 }), 'Timeout must be a number between 1 and 300 seconds'],
      ['timeout 30500 ms', webhook({ timeout: 30500 }), 'Timeout must be a number between 1 and 300 seconds'],
      ['timeout 301000 ms', webhook({ timeout: 301000 }), 'Timeout must be a number between 1 and 300 seconds'],
      ['retryAttempts -1', webhook({ retryAttempts: -1 }), 'Retry attempts must be a number between 0 and 10'],
      ['retryAttempts 11', webhook({ retryAttempts: 11 }), 'Retry attempts must be a number between 0 and 10'],
      ['retryAttempts 1.5', webhook({ retryAttempts: 1.5 }), 'Retry attempts must be a number between 0 and 10'],
      ['headers as an array', webhook({ headers: ['x'] }), 'Headers must be an object with string values'],
      [
        'headers with a number value',
        webhook({ headers: { 'X-N': 1 } }),
        'Headers must be an object with string values',
      ],
      ['a header name with a space', webhook({ headers: { 'X A': 'v' } }), 'Invalid header name: "X A"'],
      ['an empty header name', webhook({ headers: { '': 'v' } }), 'Invalid header name: ""'],
      [
        'a header value with a line break',
        webhook({ headers: { 'X-A': 'v\r\nX-Injected: 1' } }),
        'Invalid value for header X-A: line breaks and control characters are not allowed',
      ],
      ['secret as a number', webhook({ secret: 42 }), 'secret must be a string'],
      [
        'a whsec_ secret that is not base64',
        webhook({ secret: 'whsec_abc' }),
        'A whsec_ secret must be base64 after its prefix (Standard Webhooks libraries decode it)',
      ],
      [
        'a whsec_ secret with nothing after it',
        webhook({ secret: 'whsec_' }),
        'A whsec_ secret must be base64 after its prefix (Standard Webhooks libraries decode it)',
      ],
      ['config as a string', { type: 'webhook', config: 'https://x.example.com' }, 'Configuration must be an object'],
      [
        'email without forwardTo',
        { type: 'email', config: { subjectPrefix: 'x' } },
        'Forward-to email address is required',
      ],
      [
        'email with a bad forwardTo',
        { type: 'email', config: { forwardTo: 'nobody' } },
        'Invalid forward-to email address format',
      ],
      [
        'email with a forwardTo that reads as another address (a,b@ is sent to b@)',
        { type: 'email', config: { forwardTo: 'root,boss@example.com' } },
        'Invalid forward-to email address format',
      ],
      [
        'email with an address literal that names no IP address (mail to it could never be sent)',
        { type: 'email', config: { forwardTo: 'ops@[IPv4:203.0.113.5]' } },
        'Invalid forward-to email address format',
      ],
      [
        'email with an address literal in a shorthand IPv4 spelling',
        { type: 'email', config: { forwardTo: 'ops@[0xcb.0.113.5]' } },
        'Invalid forward-to email address format',
      ],
      [
        'email with includeAttachments "yes"',
        { type: 'email', config: { forwardTo: 'a@example.com', includeAttachments: 'yes' } },
        'includeAttachments must be a boolean',
      ],
      [
        'email with a malformed fromAddress',
        { type: 'email', config: { forwardTo: 'a@example.com', fromAddress: 'relay' } },
        'Invalid from address format',
      ],
      [
        'email with fromAddress on an unverified domain',
        { type: 'email', config: { forwardTo: 'a@example.com', fromAddress: 'x@pending-endpoints.test' } },
        'From address must be on a verified domain of your account: pending-endpoints.test is not',
      ],
      [
        "email with fromAddress on another account's verified domain",
        { type: 'email', config: { forwardTo: 'a@example.com', fromAddress: 'x@not-mine.test' } },
        'From address must be on a verified domain of your account: not-mine.test is not',
      ],
      ['group without emails', { type: 'email_group', config: {} }, 'Email group must have an emails array'],
      [
        'group with an empty list',
        { type: 'email_group', config: { emails: [] } },
        'Email group must have at least one email address',
      ],
      [
        'group of 51',
        { type: 'email_group', config: { emails: Array.from({ length: 51 }, (_, i) => `m${i}@example.com`) } },
        'Email group cannot have more than 50 email addresses',
      ],
      [
        'group with an invalid address',
        { type: 'email_group', config: { emails: ['a@example.com', 'oops'] } },
        'Invalid email address in group: oops',
      ],
      [
        'group with an address that reads as another one (a<b@ is sent to b@)',
        { type: 'email_group', config: { emails: ['a@example.com', 'root<boss@example.com'] } },
        'Invalid email address in group: root<boss@example.com',
      ],
      [
        'group with an address literal that is a host name',
        { type: 'email_group', config: { emails: ['a@example.com', 'ops@[mail.example.com]'] } },
        'Invalid email address in group: ops@[mail.example.com]',
      ],
      [
        'group with duplicates in different case',
        { type: 'email_group', config: { emails: ['a@example.com', 'A@example.com'] } },
        'Email group contains duplicate email addresses',
      ],
      [
        'group with fromAddress on an unverified domain',
        { type: 'email_group', config: { emails: ['a@example.com'], fromAddress: 'x@pending-endpoints.test' } },
        'From address must be on a verified domain of your account: pending-endpoints.test is not',
      ],
    ];
    for (const [title, body, details] of invalid) {
      test(`${family}: 400 Invalid configuration for ${title}`, async () => {
        const response = await api.post(path, { name: 'x', ...body });
        assert.equal(response.status, 400);
        assert.deepEqual(response.body, { error: 'Invalid configuration', details });
      });
    }

    test(`${family}: a group of exactly 50 is accepted`, async () => {
      const emails = Array.from({ length: 50 }, (_, i) => `m${i}@example.com`);
      const response = await api.post(path, { name: 'Fifty', type: 'email_group', config: { emails } });
      assert.equal(response.status, 201);
      assert.equal(response.body.groupEmails.length, 50);
    });

    test(`${family}: timeout 1 and 300, retryAttempts 0 and 10 are the accepted bounds`, async () => {
      for (const config of [
        { timeout: 1, retryAttempts: 0 },
        { timeout: 300, retryAttempts: 10 },
      ]) {
        const response = await api.post(path, webhook(config));
        assert.equal(response.status, 201);
        assert.equal(response.body.config.timeout, config.timeout);
        assert.equal(response.body.config.retryAttempts, config.retryAttempts);
      }
    });

    test(`${family}: 400 for a name over 255 characters and a description over 1000`, async () => {
      const long = await api.post(path, { ...webhook(), name: 'n'.repeat(256) });
      assert.equal(long.status, 400);
      assert.deepEqual(long.body, { error: 'Name must be 1 to 255 characters' });
      const described = await api.post(path, { ...webhook(), description: 'd'.repeat(1001) });
      assert.equal(described.status, 400);
      assert.deepEqual(described.body, { error: 'Description must be at most 1000 characters' });
    });
  }
});

describe('GET /endpoints', () => {
  test('filters by type, active and search, sorts newest or oldest first, and paginates', async () => {
    const lister = apiClient(server.baseUrl, await server.newAccountKey('lister'));
    const ids: string[] = [];
    for (const body of [
      { name: 'Alpha hook', type: 'webhook', config: { url: 'https://a.example.com' } },
      { name: 'Beta forward', type: 'email', config: { forwardTo: 'b@example.com' } },
      { name: 'Gamma 100%_hook', type: 'webhook', config: { url: 'https://c.example.com' } },
    ]) {
      ids.push((await lister.post('/api/e2/endpoints', body)).body.id);
    }
    await lister.put(`/api/v2/endpoints/${ids[2]}`, { isActive: false });
    const names = (body: { data: Array<{ name: string }> }) => body.data.map((e) => e.name);

    const all = await lister.get('/api/v2/endpoints');
    assert.deepEqual(names(all.body), ['Gamma 100%_hook', 'Beta forward', 'Alpha hook']);
    assert.deepEqual(all.body.pagination, { limit: 50, offset: 0, total: 3, hasMore: false });
    assert.deepEqual(all.body.data[0].deliveryStats, ZERO_STATS);
    assert.deepEqual(names((await lister.get('/api/e2/endpoints?sortBy=oldest')).body), [
      'Alpha hook',
      'Beta forward',
      'Gamma 100%_hook',
    ]);
    assert.deepEqual(names((await lister.get('/api/e2/endpoints?type=webhook')).body), [
      'Gamma 100%_hook',
      'Alpha hook',
    ]);
    assert.deepEqual(names((await lister.get('/api/v2/endpoints?active=false')).body), ['Gamma 100%_hook']);
    assert.deepEqual(names((await lister.get('/api/v2/endpoints?active=true&type=webhook')).body), ['Alpha hook']);
    assert.deepEqual(names((await lister.get('/api/e2/endpoints?search=HOOK')).body), [
      'Gamma 100%_hook',
      'Alpha hook',
    ]);
    assert.deepEqual(names((await lister.get('/api/e2/endpoints?search=%25_')).body), ['Gamma 100%_hook']);
    const page = await lister.get('/api/v2/endpoints?limit=2&offset=1');
    assert.deepEqual(names(page.body), ['Beta forward', 'Alpha hook']);
    assert.deepEqual(page.body.pagination, { limit: 2, offset: 1, total: 3, hasMore: false });
  });

  for (const family of families) {
    test(`${family}: 400 for a bad limit, offset or type filter`, async () => {
      const limit = await api.get(`/api/${family}/endpoints?limit=0`);
      assert.equal(limit.status, 400);
      assert.deepEqual(limit.body, { error: 'Limit must be between 1 and 100' });
      const offset = await api.get(`/api/${family}/endpoints?offset=-5`);
      assert.equal(offset.status, 400);
      assert.deepEqual(offset.body, { error: 'Offset must be non-negative' });
      const type = await api.get(`/api/${family}/endpoints?type=sms`);
      assert.equal(type.status, 400);
      assert.match(type.body.error, /^Invalid request: querystring\/type /);
    });
  }
});

describe('GET, PUT and DELETE /endpoints/{id}', () => {
  for (const family of families) {
    const path = `/api/${family}/endpoints`;

    test(`${family}: read adds recentDeliveries, associatedEmails and catchAllDomains`, async () => {
      const created = await api.post(path, webhook());
      const address = await api.post('/api/v2/email-addresses', {
        address: `read-${family}@endpoints.test`,
        domainId: verified.id,
        endpointId: created.body.id,
      });
      await api.put(`/api/v2/domains/${verified.id}`, { isCatchAllEnabled: true, catchAllEndpointId: created.body.id });
      const read = await api.get(`${path}/${created.body.id}`);
      assert.equal(read.status, 200);
      const { recentDeliveries, associatedEmails, catchAllDomains, ...endpoint } = read.body;
      assert.deepEqual(endpoint, created.body);
      assert.deepEqual(recentDeliveries, []);
      assert.deepEqual(associatedEmails, [
        {
          id: address.body.id,
          address: `read-${family}@endpoints.test`,
          isActive: true,
          createdAt: address.body.createdAt,
        },
      ]);
      assert.deepEqual(catchAllDomains, [{ id: verified.id, domain: 'endpoints.test', status: 'verified' }]);
      await api.put(`/api/v2/domains/${verified.id}`, { isCatchAllEnabled: false, catchAllEndpointId: null });
    });

    test(`${family}: 404 Endpoint not found for unknown ids and another account's endpoints`, async () => {
      const created = await api.post(path, webhook());
      for (const [client, id] of [
        [api, 'endp_unknown'],
        [other, created.body.id],
      ] as const) {
        for (const response of [
          await client.get(`${path}/${id}`),
          await client.put(`${path}/${id}`, { name: 'stolen' }),
          await client.delete(`${path}/${id}`),
        ]) {
          assert.equal(response.status, 404);
          assert.deepEqual(response.body, { error: 'Endpoint not found' });
        }
      }
      assert.equal((await api.get(`${path}/${created.body.id}`)).body.name, 'Hook');
    });

    test(`${family}: PUT changes only the fields sent and answers without deliveryStats`, async () => {
      const created = await api.post(path, { ...webhook(), description: 'before' });
      const updated = await api.put(`${path}/${created.body.id}`, { name: 'Renamed', isActive: false });
      assert.equal(updated.status, 200);
      const { deliveryStats: _stats, ...expected } = created.body;
      assert.deepEqual(
        { ...updated.body, updatedAt: created.body.updatedAt },
        { ...expected, name: 'Renamed', isActive: false },
      );
      assert.match(updated.body.updatedAt, ISO);
      const cleared = await api.put(`${path}/${created.body.id}`, { description: null, webhookFormat: 'slack' });
      assert.equal(cleared.body.description, null);
      assert.equal(cleared.body.name, 'Renamed');
    });

    test(`${family}: PUT config replaces the settings but keeps the verification token`, async () => {
      const created = await api.post(path, webhook({ secret: 'old', timeout: 10 }));
      const token = created.body.config.verificationToken;
      const updated = await api.put(`${path}/${created.body.id}`, {
        config: { url: 'https://new.example.com/hook', retryAttempts: 5 },
      });
      assert.equal(updated.status, 200);
      assert.deepEqual(updated.body.config, {
        url: 'https://new.example.com/hook',
        timeout: 30,
        retryAttempts: 5,
        verificationToken: token,
      });
      assert.deepEqual((await api.get(`${path}/${created.body.id}`)).body.config, updated.body.config);
    });

    test(`${family}: PUT validates a new config against the endpoint's type`, async () => {
      const created = await api.post(path, {
        name: 'Group',
        type: 'email_group',
        config: { emails: ['a@example.com'] },
      });
      const response = await api.put(`${path}/${created.body.id}`, { config: { emails: [] } });
      assert.equal(response.status, 400);
      assert.deepEqual(response.body, {
        error: 'Invalid configuration',
        details: 'Email group must have at least one email address',
      });
      const swapped = await api.put(`${path}/${created.body.id}`, { config: { emails: ['b@example.com'] } });
      assert.deepEqual(swapped.body.groupEmails, ['b@example.com']);
    });

    test(`${family}: DELETE makes its addresses store-only, switches off catch-all, keeps deliveries`, async () => {
      const created = await api.post(path, {
        name: 'Team',
        type: 'email_group',
        config: { emails: ['a@example.com', 'b@example.com'] },
      });
      const addresses = [];
      for (const local of ['z', 'y']) {
        addresses.push(
          (
            await api.post('/api/e2/email-addresses', {
              address: `${local}-del-${family}@endpoints.test`,
              domainId: verified.id,
              endpointId: created.body.id,
            })
          ).body,
        );
      }
      await api.put(`/api/v2/domains/${verified.id}`, { isCatchAllEnabled: true, catchAllEndpointId: created.body.id });

      const removed = await api.delete(`${path}/${created.body.id}`, {
        headers: { 'content-type': 'application/json' },
        raw: '',
      });
      assert.equal(removed.status, 200);
      assert.deepEqual(removed.body, {
        message: 'Endpoint deleted successfully',
        cleanup: {
          emailAddressesUpdated: 2,
          emailAddresses: [`y-del-${family}@endpoints.test`, `z-del-${family}@endpoints.test`],
          domainsUpdated: 1,
          domains: ['endpoints.test'],
          groupEmailsDeleted: 2,
          deliveriesDeleted: 0,
        },
      });
      assert.equal((await api.get(`${path}/${created.body.id}`)).status, 404);
      for (const address of addresses) {
        const read = await api.get(`/api/v2/email-addresses/${address.id}`);
        assert.equal(read.body.endpointId, null);
        assert.deepEqual(read.body.routing, { type: 'none', id: null, name: null, isActive: false });
      }
      const domain = await api.get(`/api/v2/domains/${verified.id}`);
      assert.equal(domain.body.isCatchAllEnabled, false);
      assert.equal(domain.body.catchAllEndpointId, null);
    });
  }
});
