import assert from 'node:assert/strict';
import { startTestApp, type TestApp } from '../helpers/app.ts';
import type { DnsServer } from '../helpers/dns-server.ts';
import { createVerifiedDomain } from '../helpers/domains.ts';
import { type ApiClient, apiClient } from '../helpers/http.ts';

/** Creates an address through the API, routed to `endpointId` when given, and returns its id. */
export async function createAddress(
  api: ApiClient,
  address: string,
  domainId: string,
  extra: { endpointId?: string; isActive?: boolean } = {},
): Promise<string> {
  const created = await api.post('/api/v2/email-addresses', { address, domainId, ...extra });
  assert.equal(created.status, 201, JSON.stringify(created.body));
  return created.body.id;
}

/** Creates an endpoint of `type` through the API (switched off afterwards when `isActive` is false). */
export async function createEndpoint(
  api: ApiClient,
  type: 'webhook' | 'email' | 'email_group',
  options: { isActive?: boolean } = {},
): Promise<string> {
  const config =
    type === 'webhook'
      ? { url: 'http://127.0.0.1:9/hook' }
      : type === 'email'
        ? { forwardTo: 'someone@elsewhere.test' }
        : { emails: ['a@elsewhere.test', 'b@elsewhere.test'] };
  const created = await api.post('/api/v2/endpoints', { name: `${type} endpoint`, type, config });
  assert.equal(created.status, 201, JSON.stringify(created.body));
  if (options.isActive === false) {
    const paused = await api.put(`/api/v2/endpoints/${created.body.id}`, { isActive: false });
    assert.equal(paused.status, 200, JSON.stringify(paused.body));
  }
  return created.body.id;
}

/**
 * A test Mailroom (configured by `env`, resolving through `dns`) with `address` receiving: its domain verified and
 * the address active, store only.
 */
export async function startReceivingApp(
  dns: DnsServer,
  address: string,
  env: Record<string, string> = {},
): Promise<TestApp> {
  const app = await startTestApp({ DNS_SERVERS: dns.address, ...env });
  const api = apiClient(app.baseUrl, app.apiKey);
  const domain = await createVerifiedDomain(api, dns, address.slice(address.indexOf('@') + 1));
  await createAddress(api, address, domain.id);
  return app;
}
