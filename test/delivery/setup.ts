import assert from 'node:assert/strict';
import type { ApiClient } from '../helpers/http.ts';

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
