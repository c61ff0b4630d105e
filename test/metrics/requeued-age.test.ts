import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { createWebhookEndpoint, routeAddress, waitForDelivery } from '../delivery/setup.ts';
import { startTestApp, type TestApp } from '../helpers/app.ts';
import { movableClock } from '../helpers/clock.ts';
import { type DnsServer, startDnsServer } from '../helpers/dns-server.ts';
import { createVerifiedDomain } from '../helpers/domains.ts';
import { type ApiClient, apiClient } from '../helpers/http.ts';
import { type PrometheusExposition, parsePrometheusText } from '../helpers/prometheus.ts';
import { sendMail } from '../helpers/smtp.ts';
import { startWebhookReceiver, type WebhookReceiver } from '../helpers/webhook-receiver.ts';

let dns: DnsServer;
let receiver: WebhookReceiver;
let server: TestApp;
let api: ApiClient;
const clock = movableClock();

before(async () => {
  dns = await startDnsServer();
  receiver = await startWebhookReceiver();
  server = await startTestApp({ DNS_SERVERS: dns.address }, { clock });
  api = apiClient(server.baseUrl, server.apiKey);
});
after(async () => {
  await server.close();
  await receiver.close();
  await dns.close();
});

async function scrape(): Promise<PrometheusExposition> {
  const response = await api.get('/metrics');
  assert.equal(response.status, 200, String(response.body));
  return parsePrometheusText(response.body);
}

test('mailroom_delivery_oldest_pending_age_seconds: a delivery resent days after it failed waits from the resend', async () => {
  const { id: domainId } = await createVerifiedDomain(api, dns, 'requeued.test');
  const endpoint = await createWebhookEndpoint(api, 'Once', { url: receiver.url, retryAttempts: 0 });
  await routeAddress(api, 'once@requeued.test', domainId, { endpointId: endpoint.id });
  receiver.answer({ status: 500 });
  const sent = await sendMail({ port: server.smtpPort, to: 'once@requeued.test' });
  assert.equal(sent.code, 250, sent.response);
  const emailId = sent.queuedIds[0]!;
  assert.equal((await waitForDelivery(api, emailId)).status, 'failed');

  clock.advanceDays(3);
  let answer!: () => void;
  receiver.answer({ status: 200, after: new Promise((resolve) => (answer = () => resolve(undefined))) });
  const resent = await api.post(`/api/v2/emails/${emailId}/resend`, { endpointId: endpoint.id });
  assert.equal(resent.status, 200, JSON.stringify(resent.body));
  await receiver.waitForRequests(2);
  const waiting = await scrape();
  assert.equal(waiting.value('mailroom_delivery_queue_depth'), 1);
  const age = waiting.value('mailroom_delivery_oldest_pending_age_seconds')!;
  assert.ok(age >= 0 && age < 60, `age ${age} s`);

  answer();
  assert.equal((await waitForDelivery(api, emailId, (delivery) => delivery.attempts === 2)).status, 'success');
  const done = await scrape();
  assert.equal(done.value('mailroom_delivery_queue_depth'), 0);
  assert.equal(done.value('mailroom_delivery_oldest_pending_age_seconds'), 0);
});
