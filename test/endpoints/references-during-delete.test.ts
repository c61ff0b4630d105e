import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { startSecondInstance, startTestApp, type TestApp } from '../helpers/app.ts';
import { type DnsServer, startDnsServer } from '../helpers/dns-server.ts';
import { createVerifiedDomain } from '../helpers/domains.ts';
import { type ApiClient, apiClient } from '../helpers/http.ts';
import { sendMail } from '../helpers/smtp.ts';

let dns: DnsServer;
let first: TestApp;
let second: TestApp | undefined;
let api: ApiClient;
/** The same account through a second instance on the same schema (PostgreSQL), else through the first again. */
let other: ApiClient;
let domainId: string;

before(async () => {
  dns = await startDnsServer();
  first = await startTestApp({ DNS_SERVERS: dns.address });
  api = apiClient(first.baseUrl, first.apiKey);
  second = await startSecondInstance(first, { DNS_SERVERS: dns.address });
  other = second ? apiClient(second.baseUrl, first.apiKey) : api;
  domainId = (await createVerifiedDomain(api, dns, 'references.test')).id;
});
after(async () => {
  await second?.close();
  await first.close();
  await dns.close();
});

test('an endpoint deleted while addresses and the catch-all are pointed at it is referenced by none of them', async () => {
  for (let round = 0; round < 10; round++) {
    const endpoint = await api.post('/api/v2/endpoints', {
      name: `Hook ${round}`,
      type: 'webhook',
      config: { url: 'http://127.0.0.1:9/in' },
    });
    assert.equal(endpoint.status, 201, JSON.stringify(endpoint.body));
    const id = endpoint.body.id;
    const existing = await api.post('/api/v2/email-addresses', { address: `old${round}@references.test`, domainId });
    assert.equal(existing.status, 201, JSON.stringify(existing.body));
    const [created, updated, catchAll, deleted] = await Promise.all([
      other.post('/api/v2/email-addresses', { address: `new${round}@references.test`, domainId, endpointId: id }),
      other.put(`/api/v2/email-addresses/${existing.body.id}`, { endpointId: id }),
      other.put(`/api/v2/domains/${domainId}`, { isCatchAllEnabled: true, catchAllEndpointId: id }),
      api.delete(`/api/v2/endpoints/${id}`),
    ]);
    assert.equal(deleted.status, 200, JSON.stringify(deleted.body));
    // Each either came first (and the delete undid it) or after (and found no endpoint).
    assert.ok([201, 404].includes(created.status), JSON.stringify(created.body));
    assert.ok([200, 404].includes(updated.status), JSON.stringify(updated.body));
    assert.ok([200, 400].includes(catchAll.status), JSON.stringify(catchAll.body));
    const addresses = await api.get('/api/v2/email-addresses?limit=100');
    assert.deepEqual(
      addresses.body.data.filter((address: { endpointId: string | null }) => address.endpointId === id),
      [],
    );
    const domain = await api.get(`/api/v2/domains/${domainId}`);
    assert.deepEqual(
      { isCatchAllEnabled: domain.body.isCatchAllEnabled, catchAllEndpointId: domain.body.catchAllEndpointId },
      { isCatchAllEnabled: false, catchAllEndpointId: null },
      `round ${round}`,
    );
  }
  // With no catch-all left on, an address that was never created is refused.
  const sent = await sendMail({ port: first.smtpPort, to: 'nobody@references.test' });
  assert.deepEqual({ ok: sent.ok, rejected: sent.rejected }, { ok: false, rejected: ['nobody@references.test'] });
});

test('a legacy webhook deleted while an address is pointed at it is referenced by no address', async () => {
  for (let round = 0; round < 10; round++) {
    const webhook = await api.post('/api/v2/webhooks', { name: `Legacy ${round}`, url: 'http://127.0.0.1:9/in' });
    assert.equal(webhook.status, 201, JSON.stringify(webhook.body));
    const id = webhook.body.id;
    const existing = await api.post('/api/v2/email-addresses', { address: `legacy${round}@references.test`, domainId });
    const [created, updated, deleted] = await Promise.all([
      other.post('/api/v2/email-addresses', { address: `hooked${round}@references.test`, domainId, webhookId: id }),
      other.put(`/api/v2/email-addresses/${existing.body.id}`, { webhookId: id }),
      api.delete(`/api/v2/webhooks/${id}`),
    ]);
    assert.equal(deleted.status, 200, JSON.stringify(deleted.body));
    assert.ok([201, 404].includes(created.status), JSON.stringify(created.body));
    assert.ok([200, 404].includes(updated.status), JSON.stringify(updated.body));
    const addresses = await api.get('/api/v2/email-addresses?limit=100');
    assert.deepEqual(
      addresses.body.data.filter((address: { webhookId: string | null }) => address.webhookId === id),
      [],
    );
  }
});
