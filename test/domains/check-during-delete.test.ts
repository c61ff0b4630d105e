import assert from 'node:assert/strict';
import { after, before, beforeEach, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { startTestApp, type TestApp } from '../helpers/app.ts';
import { type DnsServer, startDnsServer } from '../helpers/dns-server.ts';
import { type ApiClient, apiClient } from '../helpers/http.ts';

/** How long the DNS server takes to answer about a slow domain: the window a delete can land in. */
const DNS_DELAY_MS = 1500;

let dns: DnsServer;
let server: TestApp;
let api: ApiClient;

before(async () => {
  dns = await startDnsServer();
  // The background verifier checks pending domains every 100 ms, so one is nearly always being checked.
  server = await startTestApp({ DNS_SERVERS: dns.address, DOMAIN_VERIFY_INTERVAL_SECONDS: '0.1' });
  api = apiClient(server.baseUrl, server.apiKey);
});
after(async () => {
  await server.close();
  await dns.close();
});
beforeEach(() => dns.clear());

/** Adds `name`, then makes DNS slow to answer about it, as a far or overloaded nameserver is. */
async function slowDomain(name: string): Promise<string> {
  const created = await api.post('/api/v2/domains', { domain: name });
  assert.equal(created.status, 201, JSON.stringify(created.body));
  dns.slow(name, DNS_DELAY_MS);
  dns.slow(`_mailroom.${name}`, DNS_DELAY_MS);
  return created.body.id;
}

test('GET /api/v2/domains/{id}?check=true: 404 when the domain is deleted while DNS answers, not a 500', async () => {
  const id = await slowDomain('deleted-during-check.test');
  const checking = api.get(`/api/v2/domains/${id}?check=true`);
  await sleep(300);
  assert.equal((await api.delete(`/api/v2/domains/${id}`)).status, 200);
  const checked = await checking;
  assert.equal(checked.status, 404);
  assert.deepEqual(checked.body, { error: 'Domain not found' });
});

test('GET /api/v2/domains?check=true: a domain deleted while DNS answers is left out of the page, not a 500', async () => {
  const kept = (await api.post('/api/v2/domains', { domain: 'kept-during-list.test' })).body.id;
  const id = await slowDomain('deleted-during-list.test');
  const listing = api.get('/api/v2/domains?check=true');
  await sleep(300);
  assert.equal((await api.delete(`/api/v2/domains/${id}`)).status, 200);
  const listed = await listing;
  assert.equal(listed.status, 200, JSON.stringify(listed.body));
  assert.deepEqual(
    listed.body.data.map((domain: { id: string }) => domain.id),
    [kept],
  );
  await api.delete(`/api/v2/domains/${kept}`);
});

test('the background verifier passes over a pending domain deleted during its check without failing the pass', async () => {
  const id = await slowDomain('deleted-during-pass.test');
  await sleep(500);
  assert.equal((await api.delete(`/api/v2/domains/${id}`)).status, 200);
  await sleep(DNS_DELAY_MS + 500);
  assert.deepEqual(server.loggedErrors(), []);
});
