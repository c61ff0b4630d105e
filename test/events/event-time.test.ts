import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { createWebhookEndpoint, routeAddress } from '../delivery/setup.ts';
import { startTestApp, type TestApp } from '../helpers/app.ts';
import { movableClock } from '../helpers/clock.ts';
import { type DnsServer, startDnsServer } from '../helpers/dns-server.ts';
import { createVerifiedDomain } from '../helpers/domains.ts';
import { type ApiClient, apiClient } from '../helpers/http.ts';
import { sendMail } from '../helpers/smtp.ts';
import { startWebhookReceiver, type WebhookReceiver } from '../helpers/webhook-receiver.ts';
import { type EventStream, openEventStream } from './sse-client.ts';

const clock = movableClock();
let dns: DnsServer;
let receiver: WebhookReceiver;
let server: TestApp;
let api: ApiClient;
let stream: EventStream;

before(async () => {
  dns = await startDnsServer();
  receiver = await startWebhookReceiver();
  server = await startTestApp({ DNS_SERVERS: dns.address }, { clock });
  api = apiClient(server.baseUrl, server.apiKey);
  const domain = await createVerifiedDomain(api, dns, 'event-time.test');
  const endpoint = await createWebhookEndpoint(api, 'Timed hook', { url: receiver.url });
  await routeAddress(api, 'inbox@event-time.test', domain.id, { endpointId: endpoint.id });
  stream = await openEventStream(server.baseUrl, server.apiKey);
});
after(async () => {
  await stream?.close();
  await server.close();
  await receiver.close();
  await dns.close();
});

test('GET /api/v2/events: a delivery event is stamped by the app clock, at the attempt end the delivery records', async () => {
  // A day ahead of the wall clock: a stamp taken from the wall clock would be a day early.
  clock.advanceDays(1);
  const sent = await sendMail({
    port: server.smtpPort,
    from: 'ann@sender.test',
    to: 'inbox@event-time.test',
    subject: 'Timed',
    text: 'Hello',
  });
  assert.equal(sent.code, 250, sent.response);
  const emailId = sent.queuedIds[0]!;
  let delivered: { data: Record<string, unknown> } | undefined;
  for (let count = 1; count <= 20 && !delivered; count++) {
    const events = await stream.waitFor(count);
    delivered = events.find((event) => event.event === 'delivery.succeeded' && event.data.emailId === emailId);
  }
  assert.ok(delivered, JSON.stringify(stream.events));
  const deliveries = await api.get(`/api/v2/deliveries?emailId=${emailId}`);
  const [delivery] = deliveries.body.data;
  assert.equal(delivery.status, 'success');
  assert.equal(delivered.data.createdAt, delivery.responseData.deliveredAt);
  assert.equal(
    delivered.data.createdAt,
    new Date(Date.parse(delivery.lastAttemptAt) + delivery.responseData.deliveryTime).toISOString(),
  );
});
