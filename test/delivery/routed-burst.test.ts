import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import nodemailer from 'nodemailer';
import { startTestApp, type TestApp } from '../helpers/app.ts';
import { type DnsServer, startDnsServer } from '../helpers/dns-server.ts';
import { createVerifiedDomain } from '../helpers/domains.ts';
import { type ApiClient, apiClient } from '../helpers/http.ts';
import { startWebhookReceiver, type WebhookReceiver } from '../helpers/webhook-receiver.ts';
import { createWebhookEndpoint, routeAddress } from './setup.ts';

const MESSAGES = 300;
const CONNECTIONS = 10;

let dns: DnsServer;
let server: TestApp;
let api: ApiClient;
let receiver: WebhookReceiver;

before(async () => {
  dns = await startDnsServer();
  receiver = await startWebhookReceiver();
  server = await startTestApp({ DNS_SERVERS: dns.address });
  api = apiClient(server.baseUrl, server.apiKey);
});
after(async () => {
  await receiver.close();
  await server.close();
  await dns.close();
});

async function deliveriesWithStatus(status: string): Promise<number> {
  const list = await api.get(`/api/v2/deliveries?status=${status}&limit=1`);
  assert.equal(list.status, 200, JSON.stringify(list.body));
  return Number(list.body.pagination.total);
}

test('a burst with routing enabled delivers every webhook exactly once to a healthy receiver', async () => {
  const { id: domainId } = await createVerifiedDomain(api, dns, 'burst.test');
  const endpoint = await createWebhookEndpoint(api, 'Burst receiver', { url: receiver.url });
  await routeAddress(api, 'inbox@burst.test', domainId, { endpointId: endpoint.id });

  const transport = nodemailer.createTransport({
    host: '127.0.0.1',
    port: server.smtpPort,
    ignoreTLS: true,
    pool: true,
    maxConnections: CONNECTIONS,
    maxMessages: Number.POSITIVE_INFINITY,
  });
  const emailIds = await Promise.all(
    Array.from({ length: MESSAGES }, async (_, n) => {
      const info = await transport.sendMail({
        from: 'ann@sender.test',
        to: 'inbox@burst.test',
        subject: `Burst ${n}`,
        text: `Message ${n}`,
        messageId: `<burst-${n}@sender.test>`,
      });
      const id = /queued as (email_\w+)/.exec(String(info.response))?.[1];
      assert.ok(id, String(info.response));
      return id;
    }),
  );
  transport.close();
  assert.equal(new Set(emailIds).size, MESSAGES);

  await receiver.waitForRequests(MESSAGES, 60_000);
  // Every job recorded as delivered; a webhook sent twice would have arrived before its second outcome was recorded.
  const deadline = Date.now() + 30_000;
  while ((await deliveriesWithStatus('success')) < MESSAGES && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  assert.equal(await deliveriesWithStatus('success'), MESSAGES);
  assert.equal(await deliveriesWithStatus('pending'), 0);
  assert.equal(await deliveriesWithStatus('processing'), 0);
  assert.equal(await deliveriesWithStatus('failed'), 0);

  assert.equal(receiver.requests.length, MESSAGES);
  const webhookIds = new Set(receiver.requests.map((request) => String(request.headers['webhook-id'])));
  assert.equal(webhookIds.size, MESSAGES);
  const delivered = receiver.requests.map((request) => String(request.headers['x-email-id'])).sort();
  assert.deepEqual(delivered, [...emailIds].sort());
});
