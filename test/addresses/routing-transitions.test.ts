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
let domainId: string;
let endpoint: { id: string; name: string; config: Record<string, unknown> };
let webhook: { id: string; name: string; url: string };
let foreignEndpointId: string;
let foreignWebhookId: string;

before(async () => {
  dns = await startDnsServer();
  server = await startTestApp({ DNS_SERVERS: dns.address });
  api = apiClient(server.baseUrl, server.apiKey);
  other = apiClient(server.baseUrl, await server.newAccountKey('other'));
  domainId = (await createVerifiedDomain(api, dns, 'transitions.test')).id;
  endpoint = (
    await api.post('/api/v2/endpoints', {
      name: 'Forward',
      type: 'email',
      config: { forwardTo: 'team@example.com' },
    })
  ).body;
  webhook = (await api.post('/api/v2/webhooks', { name: 'Legacy', url: 'https://legacy.example.com/in' })).body;
  foreignEndpointId = (
    await other.post('/api/v2/endpoints', { name: 'Theirs', type: 'email', config: { forwardTo: 'b@example.com' } })
  ).body.id;
  foreignWebhookId = (await other.post('/api/v2/webhooks', { name: 'Theirs', url: 'https://b.example.com' })).body.id;
});
after(async () => {
  await server.close();
  await dns.close();
});

const families = ['e2', 'v2'] as const;

function endpointRouting() {
  return {
    type: 'endpoint',
    id: endpoint.id,
    name: 'Forward',
    config: { forwardTo: 'team@example.com', includeAttachments: true, email: 'team@example.com' },
    isActive: true,
  };
}

function webhookRouting() {
  return {
    type: 'webhook',
    id: webhook.id,
    name: 'Legacy',
    config: { url: 'https://legacy.example.com/in', timeout: 30, retryAttempts: 3 },
    isActive: true,
  };
}

const NONE = { type: 'none', id: null, name: null, isActive: false };

async function routeOf(address: string) {
  const decision = await server.app.router.resolve(address);
  return decision.accepted ? decision.target : decision.reason;
}

describe('routing transitions of an address', () => {
  for (const family of families) {
    const path = `/api/${family}/email-addresses`;

    test(`${family}: endpoint -> webhook -> endpoint -> none, each id clearing the other, and the router follows`, async () => {
      const address = `flow-${family}@transitions.test`;
      const created = await api.post(path, { address, domainId, endpointId: endpoint.id });
      assert.equal(created.status, 201);
      assert.deepEqual(created.body.routing, endpointRouting());
      assert.deepEqual([created.body.endpointId, created.body.webhookId], [endpoint.id, null]);
      assert.deepEqual(await routeOf(address), { kind: 'endpoint', endpointId: endpoint.id, endpointType: 'email' });

      const toWebhook = await api.put(`${path}/${created.body.id}`, { webhookId: webhook.id });
      assert.equal(toWebhook.status, 200);
      assert.deepEqual([toWebhook.body.endpointId, toWebhook.body.webhookId], [null, webhook.id]);
      assert.deepEqual(toWebhook.body.routing, webhookRouting());
      assert.deepEqual(await routeOf(address), { kind: 'webhook', webhookId: webhook.id });

      const back = await api.put(`${path}/${created.body.id}`, { endpointId: endpoint.id });
      assert.deepEqual([back.body.endpointId, back.body.webhookId], [endpoint.id, null]);
      assert.deepEqual(back.body.routing, endpointRouting());

      const cleared = await api.put(`${path}/${created.body.id}`, { endpointId: null });
      assert.deepEqual([cleared.body.endpointId, cleared.body.webhookId], [null, null]);
      assert.deepEqual(cleared.body.routing, NONE);
      assert.deepEqual(await routeOf(address), { kind: 'none' });
    });

    test(`${family}: null for the routing that is not set leaves the other in place`, async () => {
      const created = await api.post(path, {
        address: `keep-${family}@transitions.test`,
        domainId,
        webhookId: webhook.id,
      });
      const updated = await api.put(`${path}/${created.body.id}`, { endpointId: null });
      assert.deepEqual(updated.body.routing, webhookRouting());
      const explicit = await api.put(`${path}/${created.body.id}`, { endpointId: endpoint.id, webhookId: null });
      assert.deepEqual(explicit.body.routing, endpointRouting());
      assert.equal(explicit.body.webhookId, null);
    });

    test(`${family}: 400 Cannot specify both endpoint and webhook on update, and nothing changes`, async () => {
      const created = await api.post(path, { address: `both-${family}@transitions.test`, domainId });
      const response = await api.put(`${path}/${created.body.id}`, { endpointId: endpoint.id, webhookId: webhook.id });
      assert.equal(response.status, 400);
      assert.deepEqual(response.body, { error: 'Cannot specify both endpoint and webhook' });
      assert.deepEqual((await api.get(`${path}/${created.body.id}`)).body.routing, NONE);
    });

    test(`${family}: 404 for unknown and other accounts' endpoint or webhook ids, and nothing changes`, async () => {
      const created = await api.post(path, {
        address: `foreign-${family}@transitions.test`,
        domainId,
        endpointId: endpoint.id,
      });
      for (const endpointId of ['endp_unknown', foreignEndpointId]) {
        const response = await api.put(`${path}/${created.body.id}`, { endpointId });
        assert.equal(response.status, 404);
        assert.deepEqual(response.body, { error: 'Endpoint not found or access denied' });
        const onCreate = await api.post(path, { address: `x-${family}@transitions.test`, domainId, endpointId });
        assert.equal(onCreate.status, 404);
        assert.deepEqual(onCreate.body, { error: 'Endpoint not found or access denied' });
      }
      for (const webhookId of ['whk_unknown', foreignWebhookId]) {
        const response = await api.put(`${path}/${created.body.id}`, { webhookId });
        assert.equal(response.status, 404);
        assert.deepEqual(response.body, { error: 'Webhook not found or access denied' });
        const onCreate = await api.post(path, { address: `x-${family}@transitions.test`, domainId, webhookId });
        assert.equal(onCreate.status, 404);
        assert.deepEqual(onCreate.body, { error: 'Webhook not found or access denied' });
      }
      assert.deepEqual((await api.get(`${path}/${created.body.id}`)).body.routing, endpointRouting());
    });

    test(`${family}: deactivating then activating an address keeps its routing`, async () => {
      const address = `pause-${family}@transitions.test`;
      const created = await api.post(path, { address, domainId, webhookId: webhook.id });
      const off = await api.put(`${path}/${created.body.id}`, { isActive: false });
      assert.equal(off.body.isActive, false);
      assert.deepEqual(off.body.routing, webhookRouting());
      assert.equal(await routeOf(address), 'inactive_address');
      const on = await api.put(`${path}/${created.body.id}`, { isActive: true });
      assert.equal(on.body.isActive, true);
      assert.deepEqual(on.body.routing, webhookRouting());
      assert.deepEqual(await routeOf(address), { kind: 'webhook', webhookId: webhook.id });
    });

    test(`${family}: a list item adds endpointType for endpoint routing`, async () => {
      const created = await api.post(path, {
        address: `listed-${family}@transitions.test`,
        domainId,
        endpointId: endpoint.id,
      });
      const listed = await api.get(`${path}?limit=100`);
      const item = listed.body.data.find((a: { id: string }) => a.id === created.body.id);
      assert.deepEqual(item.routing, { ...endpointRouting(), endpointType: 'email' });
    });
  }

  test('an address routed to an endpoint that is then deactivated shows routing.isActive false and is stored only', async () => {
    const paused = (
      await api.post('/api/v2/endpoints', { name: 'Paused', type: 'email', config: { forwardTo: 'p@example.com' } })
    ).body;
    const created = await api.post('/api/v2/email-addresses', {
      address: 'paused@transitions.test',
      domainId,
      endpointId: paused.id,
    });
    await api.put(`/api/v2/endpoints/${paused.id}`, { isActive: false });
    const read = await api.get(`/api/v2/email-addresses/${created.body.id}`);
    assert.equal(read.body.routing.isActive, false);
    assert.equal(read.body.routing.type, 'endpoint');
    assert.deepEqual(await routeOf('paused@transitions.test'), { kind: 'none' });
  });
});
