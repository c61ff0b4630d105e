import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { startTestApp, type TestApp } from '../helpers/app.ts';
import { type DnsServer, startDnsServer } from '../helpers/dns-server.ts';
import { createVerifiedDomain } from '../helpers/domains.ts';
import { type ApiClient, apiClient } from '../helpers/http.ts';
import { sendMail } from '../helpers/smtp.ts';

let dns: DnsServer;
let server: TestApp;
let api: ApiClient;
let other: ApiClient;
let verified: { id: string };
let pending: { id: string };
let active: { id: string };
let inactive: { id: string };
let foreign: { id: string };

before(async () => {
  dns = await startDnsServer();
  server = await startTestApp({ DNS_SERVERS: dns.address });
  api = apiClient(server.baseUrl, server.apiKey);
  other = apiClient(server.baseUrl, await server.newAccountKey('other'));
  verified = await createVerifiedDomain(api, dns, 'catch.test');
  pending = (await api.post('/api/v2/domains', { domain: 'pending-catch.test' })).body;
  active = (
    await api.post('/api/v2/endpoints', { name: 'All', type: 'email', config: { forwardTo: 'all@example.com' } })
  ).body;
  inactive = (
    await api.post('/api/v2/endpoints', { name: 'Off', type: 'webhook', config: { url: 'https://off.example.com' } })
  ).body;
  await api.put(`/api/v2/endpoints/${inactive.id}`, { isActive: false });
  foreign = (
    await other.post('/api/v2/endpoints', { name: 'Theirs', type: 'email', config: { forwardTo: 'x@example.com' } })
  ).body;
});
after(async () => {
  await server.close();
  await dns.close();
});

const families = [
  ['e2', 'patch'],
  ['v2', 'put'],
] as const;

describe('catch-all configuration', () => {
  for (const [family, method] of families) {
    const update = (id: string, body: unknown) => api[method](`/api/${family}/domains/${id}`, body);

    test(`${family}: enabling with an active endpoint of the account answers with catchAllEndpoint`, async () => {
      const response = await update(verified.id, { isCatchAllEnabled: true, catchAllEndpointId: active.id });
      assert.equal(response.status, 200);
      const { updatedAt, ...rest } = response.body;
      assert.deepEqual(rest, {
        id: verified.id,
        domain: 'catch.test',
        status: 'verified',
        isCatchAllEnabled: true,
        catchAllEndpointId: active.id,
        catchAllEndpoint: { id: active.id, name: 'All', type: 'email', isActive: true },
        includeSubdomains: false,
        wildcardMxRecord: null,
      });
      assert.deepEqual(await server.app.router.resolve(`anyone-${family}@catch.test`), {
        accepted: true,
        recipient: `anyone-${family}@catch.test`,
        accountId: (await server.app.accounts.authenticate(server.apiKey))!.id,
        domainId: verified.id,
        addressId: null,
        matchedBy: 'catch_all',
        target: { kind: 'endpoint', endpointId: active.id, endpointType: 'email' },
      });
      const disabled = await update(verified.id, { isCatchAllEnabled: false });
      assert.equal(disabled.body.isCatchAllEnabled, false);
      assert.deepEqual(await server.app.router.resolve(`anyone-${family}@catch.test`), {
        accepted: false,
        reason: 'unknown_address',
        accountId: (await server.app.accounts.authenticate(server.apiKey))!.id,
      });
    });

    test(`${family}: 400 when the domain is not verified`, async () => {
      const response = await update(pending.id, { isCatchAllEnabled: true, catchAllEndpointId: active.id });
      assert.equal(response.status, 400);
      assert.deepEqual(response.body, { error: 'Domain must be verified before configuring catch-all' });
    });

    test(`${family}: 400 when the endpoint is unknown or belongs to another account`, async () => {
      for (const catchAllEndpointId of ['endp_unknown', foreign.id]) {
        const response = await update(verified.id, { isCatchAllEnabled: true, catchAllEndpointId });
        assert.equal(response.status, 400);
        assert.deepEqual(response.body, { error: 'Endpoint not found or does not belong to user' });
      }
    });

    test(`${family}: enabled without an endpoint, every address's mail is accepted and stored`, async () => {
      const response = await update(verified.id, { isCatchAllEnabled: true, catchAllEndpointId: null });
      assert.equal(response.status, 200, JSON.stringify(response.body));
      assert.deepEqual(
        [response.body.isCatchAllEnabled, response.body.catchAllEndpointId, response.body.catchAllEndpoint],
        [true, null, null],
      );
      const anyone = `store-${family}@catch.test`;
      const decision = await server.app.router.resolve(anyone);
      assert.deepEqual(decision.accepted && [decision.matchedBy, decision.target], ['catch_all', { kind: 'none' }]);
      const sent = await sendMail({ port: server.smtpPort, from: 'ann@sender.test', to: anyone, subject: 'Kept' });
      assert.equal(sent.code, 250, sent.response);
      const stored = await api.get(`/api/v2/mail/${sent.queuedIds[0]}`);
      assert.deepEqual([stored.body.recipient, stored.body.subject], [anyone, 'Kept']);
      await update(verified.id, { isCatchAllEnabled: false });
    });

    test(`${family}: 400 when the endpoint is inactive`, async () => {
      const response = await update(verified.id, { isCatchAllEnabled: true, catchAllEndpointId: inactive.id });
      assert.equal(response.status, 400);
      assert.deepEqual(response.body, { error: 'Selected endpoint is not active' });
    });

    test(`${family}: 404 for another account's domain`, async () => {
      const response = await other[method](`/api/${family}/domains/${verified.id}`, {
        isCatchAllEnabled: true,
        catchAllEndpointId: foreign.id,
      });
      assert.equal(response.status, 404);
      assert.deepEqual(response.body, { error: 'Domain not found' });
    });
  }

  test('an endpoint deactivated after catch-all was enabled keeps mail accepted but undelivered', async () => {
    const later = (
      await api.post('/api/v2/endpoints', { name: 'Later', type: 'email', config: { forwardTo: 'l@example.com' } })
    ).body;
    await api.put(`/api/v2/domains/${verified.id}`, { isCatchAllEnabled: true, catchAllEndpointId: later.id });
    await api.put(`/api/v2/endpoints/${later.id}`, { isActive: false });
    const decision = await server.app.router.resolve('late@catch.test');
    assert.equal(decision.accepted, true);
    assert.deepEqual(decision.accepted && [decision.matchedBy, decision.target], ['catch_all', { kind: 'none' }]);
    const domain = await api.get(`/api/v2/domains/${verified.id}`);
    assert.deepEqual(domain.body.catchAllEndpoint, { id: later.id, name: 'Later', type: 'email', isActive: false });
    await api.put(`/api/v2/domains/${verified.id}`, { isCatchAllEnabled: false });
  });
});
