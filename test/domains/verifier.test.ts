import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { startTestApp, type TestApp } from '../helpers/app.ts';
import { type DnsServer, startDnsServer } from '../helpers/dns-server.ts';
import { publishRequiredRecords } from '../helpers/domains.ts';
import { type ApiClient, apiClient } from '../helpers/http.ts';

let dns: DnsServer;
let server: TestApp;
let api: ApiClient;

before(async () => {
  dns = await startDnsServer();
  // A pass every 100 ms, and pending domains give up after 1.8 s.
  server = await startTestApp({
    DNS_SERVERS: dns.address,
    DOMAIN_VERIFY_INTERVAL_SECONDS: '0.1',
    DOMAIN_VERIFY_GIVE_UP_HOURS: '0.0005',
  });
  api = apiClient(server.baseUrl, server.apiKey);
});
after(async () => {
  await server.close();
  await dns.close();
});

/** Polls the domain (without check=true) until its status is `status`, for at most 10 s. */
async function waitForStatus(id: string, status: string) {
  for (let i = 0; i < 200; i++) {
    const response = await api.get(`/api/v2/domains/${id}`);
    if (response.body.status === status) return response.body;
    await sleep(50);
  }
  assert.fail(`domain ${id} never became ${status}`);
}

test('the background verifier verifies a pending domain once its records appear', async () => {
  const created = await api.post('/api/v2/domains', { domain: 'background.test' });
  publishRequiredRecords(dns, created.body.dnsRecords);
  const verified = await waitForStatus(created.body.id, 'verified');
  assert.equal(verified.canReceiveEmails, true);
  assert.notEqual(verified.lastDnsCheck, null);
});

test('a domain still unverified after the give-up time becomes failed and only a manual check revives it', async () => {
  const created = await api.post('/api/v2/domains', { domain: 'gives-up.test' });
  await waitForStatus(created.body.id, 'failed');

  publishRequiredRecords(dns, created.body.dnsRecords);
  await sleep(400);
  assert.equal((await api.get(`/api/v2/domains/${created.body.id}`)).body.status, 'failed', 'failed is not re-polled');

  const checked = await api.get(`/api/v2/domains/${created.body.id}?check=true`);
  assert.equal(checked.body.status, 'verified');
  assert.equal(checked.body.verificationCheck.sesStatus, 'Success');
});

test('a failed domain whose manual check still fails stays failed', async () => {
  const created = await api.post('/api/e2/domains', { domain: 'still-failing.test' });
  await waitForStatus(created.body.id, 'failed');
  const checked = await api.get(`/api/e2/domains/${created.body.id}?check=true`);
  assert.equal(checked.body.status, 'failed');
  assert.equal(checked.body.verificationCheck.sesStatus, 'Failed');
  const failedList = await api.get('/api/e2/domains?status=failed');
  assert.ok(failedList.body.data.some((d: { id: string }) => d.id === created.body.id));
});
