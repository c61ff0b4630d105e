import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { startTestApp, type TestApp } from '../helpers/app.ts';
import { type DnsServer, startDnsServer } from '../helpers/dns-server.ts';
import { createVerifiedDomain } from '../helpers/domains.ts';
import { type ApiClient, apiClient } from '../helpers/http.ts';
import { sendMail } from '../helpers/smtp.ts';

let dns: DnsServer;
let server: TestApp;
let a: ApiClient;
let b: ApiClient;
const mine: Record<'domain' | 'endpoint' | 'webhook' | 'address', string> = {
  domain: '',
  endpoint: '',
  webhook: '',
  address: '',
};
let bDomain: string;

before(async () => {
  dns = await startDnsServer();
  server = await startTestApp({ DNS_SERVERS: dns.address });
  a = apiClient(server.baseUrl, server.apiKey);
  b = apiClient(server.baseUrl, await server.newAccountKey('account-b'));
  mine.domain = (await createVerifiedDomain(a, dns, 'account-a.test')).id;
  mine.endpoint = (
    await a.post('/api/v2/endpoints', { name: 'A hook', type: 'webhook', config: { url: 'https://a.example.com' } })
  ).body.id;
  mine.webhook = (await a.post('/api/v2/webhooks', { name: 'A legacy', url: 'https://a.example.com/legacy' })).body.id;
  mine.address = (
    await a.post('/api/v2/email-addresses', {
      address: 'info@account-a.test',
      domainId: mine.domain,
      endpointId: mine.endpoint,
    })
  ).body.id;
  bDomain = (await createVerifiedDomain(b, dns, 'account-b.test')).id;
});
after(async () => {
  await server.close();
  await dns.close();
});

describe("account B and account A's resources", () => {
  for (const family of ['e2', 'v2'] as const) {
    const resources: Array<[string, string, string, unknown]> = [
      ['domains', 'domain', 'Domain not found', { isCatchAllEnabled: false }],
      ['endpoints', 'endpoint', 'Endpoint not found', { name: 'mine now' }],
      ['email-addresses', 'address', 'Email address not found', { isActive: false }],
      ...(family === 'v2'
        ? [['webhooks', 'webhook', 'Webhook not found', { name: 'mine now' }] as [string, string, string, unknown]]
        : []),
    ];
    for (const [resource, key, error, update] of resources) {
      test(`${family}: B cannot read, update or delete A's ${resource} (404 ${error})`, async () => {
        const id = mine[key as keyof typeof mine];
        const updateMethod = family === 'e2' && resource === 'domains' ? 'patch' : 'put';
        for (const response of [
          await b.get(`/api/${family}/${resource}/${id}`),
          await b[updateMethod](`/api/${family}/${resource}/${id}`, update),
          await b.delete(`/api/${family}/${resource}/${id}`),
        ]) {
          assert.equal(response.status, 404);
          assert.deepEqual(response.body, { error });
        }
        assert.equal((await a.get(`/api/${family}/${resource}/${id}`)).status, 200);
      });

      test(`${family}: B's list of ${resource} never includes A's`, async () => {
        const listed = await b.get(`/api/${family}/${resource}?limit=100`);
        assert.equal(listed.status, 200);
        const ids = listed.body.data.map((item: { id: string }) => item.id);
        assert.equal(ids.includes(mine[key as keyof typeof mine]), false);
      });
    }
  }

  test('401 Unauthorized without a key or with a wrong one, on every route of these resources', async () => {
    const anonymous = apiClient(server.baseUrl);
    const wrong = apiClient(server.baseUrl, 'mr_wrong_key_0000000000000000');
    for (const [client, detail] of [
      [anonymous, 'Missing Authorization header: send Authorization: Bearer <key>'],
      [wrong, 'Unknown or revoked API key'],
    ] as const) {
      for (const [family, resource] of [
        ['e2', 'endpoints'],
        ['v2', 'endpoints'],
        ['e2', 'email-addresses'],
        ['v2', 'email-addresses'],
        ['v2', 'webhooks'],
      ] as const) {
        for (const response of [
          await client.get(`/api/${family}/${resource}`),
          await client.post(`/api/${family}/${resource}`, { name: 'x' }),
          await client.get(`/api/${family}/${resource}/some-id`),
          await client.put(`/api/${family}/${resource}/some-id`, {}),
          await client.delete(`/api/${family}/${resource}/some-id`),
        ]) {
          assert.equal(response.status, 401);
          assert.deepEqual(response.body, { error: 'Unauthorized', detail });
        }
      }
    }
  });

  test("B cannot route its addresses or catch-all to A's endpoint or webhook", async () => {
    const create = await b.post('/api/v2/email-addresses', {
      address: 'x@account-b.test',
      domainId: bDomain,
      endpointId: mine.endpoint,
    });
    assert.equal(create.status, 404);
    assert.deepEqual(create.body, { error: 'Endpoint not found or access denied' });
    const own = await b.post('/api/e2/email-addresses', { address: 'y@account-b.test', domainId: bDomain });
    const toWebhook = await b.put(`/api/e2/email-addresses/${own.body.id}`, { webhookId: mine.webhook });
    assert.equal(toWebhook.status, 404);
    assert.deepEqual(toWebhook.body, { error: 'Webhook not found or access denied' });
    const catchAll = await b.put(`/api/v2/domains/${bDomain}`, {
      isCatchAllEnabled: true,
      catchAllEndpointId: mine.endpoint,
    });
    assert.equal(catchAll.status, 400);
    assert.deepEqual(catchAll.body, { error: 'Endpoint not found or does not belong to user' });
    assert.deepEqual(await server.app.router.resolve('y@account-b.test').then((d) => d.accepted && d.target), {
      kind: 'none',
    });
  });

  test("B cannot mark A's mail read or archived through POST /api/v2/mail/bulk, nor see its state", async () => {
    const address = await a.post('/api/v2/email-addresses', { address: 'plain@account-a.test', domainId: mine.domain });
    assert.equal(address.status, 201, JSON.stringify(address.body));
    const sent = await sendMail({ port: server.smtpPort, to: 'plain@account-a.test' });
    assert.equal(sent.code, 250, sent.response);
    const emailId = sent.queuedIds[0]!;
    const bulk = await b.post('/api/v2/mail/bulk', {
      emailIds: [emailId],
      updates: { isRead: true, isArchived: true },
    });
    assert.deepEqual([bulk.status, bulk.body], [200, { updatedCount: 0, emails: [] }]);
    const own = await a.post('/api/v2/mail/bulk', { emailIds: [emailId], updates: { isArchived: false } });
    assert.deepEqual(own.body, { updatedCount: 1, emails: [{ id: emailId, isRead: false, isArchived: false }] });
  });

  test("B cannot add addresses on A's domain, nor take A's address", async () => {
    const onA = await b.post('/api/v2/email-addresses', { address: 'new@account-a.test', domainId: mine.domain });
    assert.equal(onA.status, 404);
    assert.deepEqual(onA.body, { error: 'Domain not found or access denied' });
    const taken = await b.post('/api/v2/domains', { domain: 'account-a.test' });
    assert.equal(taken.status, 409);
  });
});
