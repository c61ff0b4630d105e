import assert from 'node:assert/strict';
import { startTestApp, type TestApp, type TestAppOptions } from '../helpers/app.ts';
import { type DnsServer, startDnsServer } from '../helpers/dns-server.ts';
import { createVerifiedDomain } from '../helpers/domains.ts';
import { type ApiClient, apiClient } from '../helpers/http.ts';

export interface DeliveryWorld {
  dns: DnsServer;
  server: TestApp;
  api: ApiClient;
  /** The verified domain the tests route addresses on, and its id. */
  domain: string;
  domainId: string;
  close(): Promise<void>;
}

/** A running Mailroom that retries deliveries a thousand times sooner, with `domain` verified through loopback DNS. */
export async function startDeliveryWorld(
  domain: string,
  env: Record<string, string> = {},
  options: TestAppOptions = {},
): Promise<DeliveryWorld> {
  const dns = await startDnsServer();
  const server = await startTestApp({ DNS_SERVERS: dns.address, DELIVERY_RETRY_SCALE: '0.001', ...env }, options);
  const api = apiClient(server.baseUrl, server.apiKey);
  const domainId = (await createVerifiedDomain(api, dns, domain)).id;
  return {
    dns,
    server,
    api,
    domain,
    domainId,
    async close() {
      await server.close();
      await dns.close();
    },
  };
}

/** Creates a webhook endpoint through the v2 API; `config` goes in as the spec's webhook config. */
export async function createWebhookEndpoint(api: ApiClient, name: string, config: Record<string, unknown>) {
  const created = await api.post('/api/v2/endpoints', { name, type: 'webhook', config });
  assert.equal(created.status, 201, JSON.stringify(created.body));
  return created.body as { id: string; name: string; config: Record<string, unknown> };
}

export async function createForwardEndpoint(
  api: ApiClient,
  name: string,
  type: 'email' | 'email_group',
  config: Record<string, unknown>,
) {
  const created = await api.post('/api/v2/endpoints', { name, type, config });
  assert.equal(created.status, 201, JSON.stringify(created.body));
  return created.body as { id: string; name: string };
}

let webhookAddresses = 0;

/**
 * A fresh address on the world's domain routed to a fresh webhook endpoint with `config` merged over `url`, both
 * named after `name` and a number counted per test file: `Hook 1` and `hook1@<domain>`.
 */
export async function routeToWebhook(
  world: DeliveryWorld,
  name: string,
  url: string,
  config: Record<string, unknown> = {},
) {
  webhookAddresses++;
  const endpoint = await createWebhookEndpoint(world.api, `${name} ${webhookAddresses}`, { url, ...config });
  const address = `${name.toLowerCase()}${webhookAddresses}@${world.domain}`;
  await routeAddress(world.api, address, world.domainId, { endpointId: endpoint.id });
  return { endpoint, address };
}

/** An address on `domainId` routed to the endpoint (or legacy webhook when `webhookId` is given). */
export async function routeAddress(
  api: ApiClient,
  address: string,
  domainId: string,
  target: { endpointId?: string; webhookId?: string },
) {
  const created = await api.post('/api/v2/email-addresses', { address, domainId, ...target });
  assert.equal(created.status, 201, JSON.stringify(created.body));
  return created.body as { id: string };
}

export interface DeliveryView {
  id: string;
  emailId: string;
  endpointId: string;
  status: 'pending' | 'processing' | 'success' | 'failed';
  attempts: number;
  lastAttemptAt: string | null;
  lastError: string | null;
  responseData: {
    responseCode: number | null;
    responseBody: string | null;
    deliveryTime: number;
    url: string | null;
    /** The worker that made the attempt: `<host>:<pid>:<random>`. */
    worker?: string;
    /** The webhook body's fields trimmed to keep it under 1 MB, in the order they were trimmed. */
    strippedFields?: string[];
  } | null;
  attemptLog: Array<{
    attempt: number;
    startedAt: string;
    durationMs: number;
    success: boolean;
    statusCode: number | null;
    responseBody: string | null;
    error: string | null;
    url: string | null;
    recipients: Array<{ address: string; status: string; error?: string }> | null;
  }>;
}

/** Polls the delivery log until the email's delivery to `endpointId` reaches a final state (or `until` holds). */
export async function waitForDelivery(
  api: ApiClient,
  emailId: string,
  until: (delivery: DeliveryView) => boolean = (d) => d.status === 'success' || d.status === 'failed',
  timeoutMs = 15_000,
): Promise<DeliveryView> {
  const deadline = Date.now() + timeoutMs;
  let last: DeliveryView | undefined;
  for (;;) {
    const list = await api.get(`/api/v2/deliveries?emailId=${emailId}`);
    assert.equal(list.status, 200, JSON.stringify(list.body));
    const [first] = list.body.data as Array<{ id: string }>;
    if (first) {
      const detail = await api.get(`/api/v2/deliveries/${first.id}`);
      last = detail.body as DeliveryView;
      if (until(last)) return last;
    }
    if (Date.now() > deadline) throw new Error(`delivery of ${emailId} did not settle: ${JSON.stringify(last)}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}
