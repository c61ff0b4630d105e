import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { createWebhookEndpoint } from '../delivery/setup.ts';
import { startTestApp, type TestApp } from '../helpers/app.ts';
import { type DnsServer, startDnsServer } from '../helpers/dns-server.ts';
import { createVerifiedDomain } from '../helpers/domains.ts';
import { type ApiClient, apiClient } from '../helpers/http.ts';

/** A JSON body keeps its types: a null, boolean or number where the schema wants another type is refused. */

let dns: DnsServer;
let server: TestApp;
let api: ApiClient;
let domainId: string;
let addressId: string;
let endpointId: string;

before(async () => {
  dns = await startDnsServer();
  server = await startTestApp({ DNS_SERVERS: dns.address });
  api = apiClient(server.baseUrl, server.apiKey);
  domainId = (await createVerifiedDomain(api, dns, 'types.test')).id;
  addressId = (await api.post('/api/v2/email-addresses', { address: 'inbox@types.test', domainId })).body.id;
  endpointId = (await createWebhookEndpoint(api, 'Typed', { url: 'https://hooks.example.com/in' })).id;
  assert.equal((await api.put(`/api/v2/domains/${domainId}/retention`, { legalHold: true })).status, 200);
});
after(async () => {
  await server.close();
  await dns.close();
});

describe('JSON bodies are not coerced to the schema’s types', () => {
  const cases: Array<[string, string, Record<string, unknown>, string]> = [
    [
      'an address’s isActive: null',
      `/api/v2/email-addresses/{address}`,
      { isActive: null },
      'Invalid request: body/isActive must be boolean',
    ],
    [
      'a domain’s legalHold: null',
      `/api/v2/domains/{domain}/retention`,
      { legalHold: null },
      'Invalid request: body/legalHold must be boolean',
    ],
    [
      'the account’s retentionDays: true',
      '/api/v2/retention',
      { retentionDays: true },
      'Invalid request: body/retentionDays must be integer,null',
    ],
    [
      'an endpoint’s name: true',
      `/api/v2/endpoints/{endpoint}`,
      { name: true },
      'Invalid request: body/name must be string',
    ],
  ];
  for (const [title, template, body, error] of cases) {
    test(`PUT ${title} is 400`, async () => {
      const path = template
        .replace('{address}', addressId)
        .replace('{domain}', domainId)
        .replace('{endpoint}', endpointId);
      const response = await api.put(path, body);
      assert.equal(response.status, 400);
      assert.deepEqual(response.body, { error });
    });
  }

  test('nothing changed', async () => {
    assert.equal((await api.get(`/api/v2/email-addresses/${addressId}`)).body.isActive, true);
    assert.equal((await api.get(`/api/v2/domains/${domainId}/retention`)).body.legalHold, true);
    assert.equal((await api.get(`/api/v2/endpoints/${endpointId}`)).body.name, 'Typed');
  });
});
