import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { startSecondInstance, startTestApp, type TestApp } from '../helpers/app.ts';
import { type DnsServer, startDnsServer } from '../helpers/dns-server.ts';
import { createVerifiedDomain } from '../helpers/domains.ts';
import { type ApiClient, apiClient } from '../helpers/http.ts';

let dns: DnsServer;
let first: TestApp;
let second: TestApp | undefined;
let api: ApiClient;
/** The same account through a second instance on the same schema (PostgreSQL), else through the first again. */
let other: ApiClient;

before(async () => {
  dns = await startDnsServer();
  first = await startTestApp({ DNS_SERVERS: dns.address });
  api = apiClient(first.baseUrl, first.apiKey);
  second = await startSecondInstance(first, { DNS_SERVERS: dns.address });
  other = second ? apiClient(second.baseUrl, first.apiKey) : api;
});
after(async () => {
  await second?.close();
  await first.close();
  await dns.close();
});

test('a subdomain added while its parent is deleted either keeps the parent (409) or is a pending root', async () => {
  for (let round = 0; round < 8; round++) {
    const parent = await createVerifiedDomain(api, dns, `parent${round}.test`);
    const [created, deleted] = await Promise.all([
      other.post('/api/v2/domains', { domain: `sub.parent${round}.test` }),
      api.delete(`/api/v2/domains/${parent.id}`),
    ]);
    assert.equal(created.status, 201, JSON.stringify(created.body));
    if (deleted.status === 409) {
      // The subdomain came first: it inherits the parent's verification and the parent stays.
      assert.equal(deleted.body.code, 'DOMAIN_HAS_DEPENDENT_SUBDOMAINS', JSON.stringify(deleted.body));
      assert.deepEqual(
        { status: created.body.status, parentDomain: created.body.parentDomain },
        { status: 'verified', parentDomain: `parent${round}.test` },
      );
      assert.equal((await api.get(`/api/v2/domains/${parent.id}`)).status, 200);
    } else {
      // The delete came first: the name is a root of its own, to be verified by its own records.
      assert.equal(deleted.status, 200, JSON.stringify(deleted.body));
      assert.deepEqual(
        { status: created.body.status, parentDomain: created.body.parentDomain },
        { status: 'pending', parentDomain: undefined },
        `round ${round}`,
      );
      assert.equal((await api.get(`/api/v2/domains/${parent.id}`)).status, 404);
    }
    assert.equal((await api.delete(`/api/v2/domains/${created.body.id}`)).status, 200);
    if (deleted.status === 409) assert.equal((await api.delete(`/api/v2/domains/${parent.id}`)).status, 200);
  }
});

test('POST /api/v2/email-addresses while its domain is deleted: 201 then gone, or 404, never a 500', async () => {
  for (let round = 0; round < 8; round++) {
    const domain = await createVerifiedDomain(api, dns, `vanishing${round}.test`);
    const [created, deleted] = await Promise.all([
      other.post('/api/v2/email-addresses', { address: `in@vanishing${round}.test`, domainId: domain.id }),
      api.delete(`/api/v2/domains/${domain.id}`),
    ]);
    assert.equal(deleted.status, 200, JSON.stringify(deleted.body));
    if (created.status === 404) {
      // Found gone when it was to be stored, or (stored, then deleted with its domain) when it was to be shown.
      assert.ok(
        ['Domain not found or access denied', 'Email address not found'].includes(created.body.error),
        JSON.stringify(created.body),
      );
    } else {
      assert.equal(created.status, 201, JSON.stringify(created.body));
      // Created first, it went with its domain, and the delete counted it.
      assert.equal(deleted.body.deletedResources.emailAddresses, 1, JSON.stringify(deleted.body));
    }
    const addresses = await api.get(`/api/v2/email-addresses?domainId=${domain.id}`);
    assert.deepEqual(addresses.body.data, []);
  }
});
