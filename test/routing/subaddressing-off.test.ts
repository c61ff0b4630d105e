import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { startTestApp, type TestApp } from '../helpers/app.ts';
import { type DnsServer, startDnsServer } from '../helpers/dns-server.ts';
import { createVerifiedDomain } from '../helpers/domains.ts';
import { apiClient } from '../helpers/http.ts';

let dns: DnsServer;
let server: TestApp;
let addressId: string;

before(async () => {
  dns = await startDnsServer();
  server = await startTestApp({ DNS_SERVERS: dns.address, SUBADDRESSING: 'false' });
  const api = apiClient(server.baseUrl, server.apiKey);
  const domain = await createVerifiedDomain(api, dns, 'no-tags.test');
  addressId = (await api.post('/api/v2/email-addresses', { address: 'sales@no-tags.test', domainId: domain.id })).body
    .id;
});
after(async () => {
  await server.close();
  await dns.close();
});

test('SUBADDRESSING=false: user+tag@ no longer falls back to user@, while user@ still matches', async () => {
  assert.deepEqual(await server.app.router.resolve('sales+q3@no-tags.test'), {
    accepted: false,
    reason: 'unknown_address',
    accountId: (await server.app.accounts.authenticate(server.apiKey))!.id,
  });
  const exact = await server.app.router.resolve('sales@no-tags.test');
  assert.equal(exact.accepted && exact.addressId, addressId);
});
