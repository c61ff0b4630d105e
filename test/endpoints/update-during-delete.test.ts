import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { startTestApp, type TestApp } from '../helpers/app.ts';
import { type DnsServer, startDnsServer } from '../helpers/dns-server.ts';
import { type ApiClient, apiClient } from '../helpers/http.ts';

let dns: DnsServer;
let server: TestApp;
let api: ApiClient;

before(async () => {
  dns = await startDnsServer();
  // The URL guard on, so that an update's new URL is looked up in DNS, which the test holds back.
  server = await startTestApp({ DNS_SERVERS: dns.address, WEBHOOK_ALLOW_PRIVATE: 'false' });
  api = apiClient(server.baseUrl, server.apiKey);
});
after(async () => {
  await server.close();
  await dns.close();
});

let hosts = 0;

/** A host with a public address whose DNS answers take a second, so that a delete can land during the lookup. */
function slowHost(): string {
  hosts++;
  const host = `slow${hosts}.hooks.test`;
  dns.set(host, [{ type: 'A', address: '93.184.216.34' }]);
  dns.slow(host, 1000);
  return host;
}

describe('an update whose resource is deleted while its URL is checked', () => {
  for (const family of ['e2', 'v2'] as const) {
    test(`PUT /api/${family}/endpoints/{id}: 404 Endpoint not found, not a 500`, async () => {
      const created = await api.post(`/api/${family}/endpoints`, {
        name: 'Hook',
        type: 'webhook',
        config: { url: 'https://93.184.216.34/in' },
      });
      assert.equal(created.status, 201, JSON.stringify(created.body));
      const host = slowHost();
      const asked = dns.asked(host);
      const update = api.put(`/api/${family}/endpoints/${created.body.id}`, {
        name: 'Renamed',
        config: { url: `https://${host}/in` },
      });
      await asked;
      const deleted = await api.delete(`/api/${family}/endpoints/${created.body.id}`);
      assert.equal(deleted.status, 200, JSON.stringify(deleted.body));
      const updated = await update;
      assert.deepEqual(
        { status: updated.status, body: updated.body },
        { status: 404, body: { error: 'Endpoint not found' } },
      );
      assert.equal((await api.get(`/api/${family}/endpoints/${created.body.id}`)).status, 404);
    });
  }

  test('PUT /api/v2/webhooks/{id}: 404 Webhook not found, not a 500', async () => {
    const created = await api.post('/api/v2/webhooks', { name: 'Legacy', url: 'https://93.184.216.34/in' });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    const host = slowHost();
    const asked = dns.asked(host);
    const update = api.put(`/api/v2/webhooks/${created.body.id}`, { url: `https://${host}/in` });
    await asked;
    const deleted = await api.delete(`/api/v2/webhooks/${created.body.id}`);
    assert.equal(deleted.status, 200, JSON.stringify(deleted.body));
    const updated = await update;
    assert.deepEqual(
      { status: updated.status, body: updated.body },
      { status: 404, body: { error: 'Webhook not found' } },
    );
  });
});
