import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { startTestApp, type TestApp } from '../helpers/app.ts';
import { movableClock } from '../helpers/clock.ts';
import { type DnsServer, startDnsServer } from '../helpers/dns-server.ts';
import { publishRequiredRecords } from '../helpers/domains.ts';
import { type ApiClient, apiClient } from '../helpers/http.ts';

/**
 * A name another account registered and never verified is not held for ever: once verification gave up on it
 * (DOMAIN_VERIFY_GIVE_UP_HOURS), someone else may register it. A verified name is never taken.
 */

const REGISTERED = {
  error:
    'This domain is already registered on our platform. If you believe this is an error or you need to transfer ownership, please contact our support team.',
  code: 'DOMAIN_ALREADY_REGISTERED',
};

let dns: DnsServer;
let server: TestApp;
const clock = movableClock();
let squatter: ApiClient;
let owner: ApiClient;

before(async () => {
  dns = await startDnsServer();
  server = await startTestApp({ DNS_SERVERS: dns.address, DOMAIN_VERIFY_GIVE_UP_HOURS: '72' }, { clock });
  squatter = apiClient(server.baseUrl, server.apiKey);
  owner = apiClient(server.baseUrl, await server.newAccountKey('owner'));
});
after(async () => {
  await server.close();
  await dns.close();
});

test('a claim never verified gives way after DOMAIN_VERIFY_GIVE_UP_HOURS, with its addresses', async () => {
  const claim = await squatter.post('/api/v2/domains', { domain: 'wanted.test' });
  assert.equal(claim.status, 201, JSON.stringify(claim.body));
  const address = await squatter.post('/api/v2/email-addresses', { address: 'a@wanted.test', domainId: claim.body.id });
  assert.equal(address.status, 201, JSON.stringify(address.body));

  clock.advanceMinutes(71 * 60);
  const early = await owner.post('/api/v2/domains', { domain: 'wanted.test' });
  assert.deepEqual([early.status, early.body], [409, REGISTERED]);

  clock.advanceMinutes(2 * 60);
  const taken = await owner.post('/api/v2/domains', { domain: 'wanted.test' });
  assert.equal(taken.status, 201, JSON.stringify(taken.body));
  assert.equal(taken.body.status, 'pending');
  publishRequiredRecords(dns, taken.body.dnsRecords);
  assert.equal((await owner.get(`/api/v2/domains/${taken.body.id}?check=true`)).body.status, 'verified');

  assert.equal((await squatter.get(`/api/v2/domains/${claim.body.id}`)).status, 404);
  assert.equal((await squatter.get(`/api/v2/email-addresses/${address.body.id}`)).status, 404);
  // The owner's verified name is not free again, however long it waits.
  clock.advanceDays(30);
  const back = await squatter.post('/api/v2/domains', { domain: 'wanted.test' });
  assert.deepEqual([back.status, back.body], [409, REGISTERED]);
});
