import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { startTestApp, type TestApp } from '../helpers/app.ts';
import { type DnsServer, startDnsServer } from '../helpers/dns-server.ts';
import { createVerifiedDomain } from '../helpers/domains.ts';
import { type ApiClient, apiClient } from '../helpers/http.ts';
import { freePort } from '../helpers/ports.ts';
import { sendMail } from '../helpers/smtp.ts';
import { createForwardEndpoint, routeAddress } from './setup.ts';

/**
 * Forwarding loops through Mailroom itself: the domain's MX is this Mailroom, and direct MX delivery reaches it, so
 * two addresses forwarding to each other hand a message back and forth until the hop limit stops it.
 */

let dns: DnsServer;
let app: TestApp;
let api: ApiClient;
let domainId: string;

before(async () => {
  dns = await startDnsServer();
  const smtpPort = await freePort();
  app = await startTestApp({
    DNS_SERVERS: dns.address,
    SMTP_PORT: String(smtpPort),
    FORWARD_MX_PORT: String(smtpPort),
    ALLOW_PRIVATE_DESTINATIONS: 'true',
    DELIVERY_RETRY_SCALE: '0.001',
    // Every forward comes back from 127.0.0.1: the default 10 at once would refuse some, and their retries run out.
    SMTP_MAX_CONNECTIONS_PER_IP: '1000',
  });
  api = apiClient(app.baseUrl, app.apiKey);
  // The domain's MX record names MX_HOST, which must lead back to this process.
  dns.set('mx.mailroom.test', [{ type: 'A', address: '127.0.0.1' }]);
  domainId = (await createVerifiedDomain(api, dns, 'loop.test')).id;
});
after(async () => {
  await app.close();
  await dns.close();
});

async function failedDeliveries() {
  const list = await api.get('/api/v2/deliveries?status=failed&limit=100');
  assert.equal(list.status, 200, JSON.stringify(list.body));
  return list.body.data as Array<{ id: string; lastError: string | null }>;
}

test('a negative X-Mailroom-Hops from a sender cannot stretch a loop between two addresses past the hop limit', async () => {
  const toB = await createForwardEndpoint(api, 'To B', 'email', { forwardTo: 'b@loop.test' });
  const toA = await createForwardEndpoint(api, 'To A', 'email', { forwardTo: 'a@loop.test' });
  await routeAddress(api, 'a@loop.test', domainId, { endpointId: toB.id });
  await routeAddress(api, 'b@loop.test', domainId, { endpointId: toA.id });
  const sent = await sendMail({
    port: app.smtpPort,
    from: 'mallory@sender.test',
    to: 'a@loop.test',
    subject: 'Ping',
    headers: { 'X-Mailroom-Hops': '-100000' },
  });
  assert.equal(sent.code, 250, sent.response);

  const deadline = Date.now() + 20_000;
  let failed = await failedDeliveries();
  while (failed.length === 0 && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 50));
    failed = await failedDeliveries();
  }
  assert.deepEqual(
    failed.map((d) => d.lastError),
    ['FORWARDING_HOP_LIMIT: the message already passed through Mailroom 5 times'],
  );
  // The original and five forwards: hops 0 to 5, the last one refused.
  const mail = await api.get('/api/v2/mail?limit=100');
  assert.equal(mail.body.pagination.total, 6);
});

test('a group whose members come back through the catch-all makes at most 100 copies a level, not 10 times more at each hop', async () => {
  const fan = await createVerifiedDomain(api, dns, 'fan.test');
  const members = Array.from({ length: 10 }, (_, index) => `m${index}@fan.test`);
  const group = await createForwardEndpoint(api, 'Everyone', 'email_group', { emails: members });
  const catchAll = await api.put(`/api/v2/domains/${fan.id}`, {
    isCatchAllEnabled: true,
    catchAllEndpointId: group.id,
  });
  assert.equal(catchAll.status, 200, JSON.stringify(catchAll.body));
  const sent = await sendMail({ port: app.smtpPort, from: 'ann@sender.test', to: 'anyone@fan.test', subject: 'Fan' });
  assert.equal(sent.code, 250, sent.response);

  // The original; its 10 copies (Copies: 10); their 9 each, the tenth being the receiving address (Copies: 100);
  // and no more, as those would make 1,000.
  const copyLimit = (error: string | null) => error?.startsWith('FORWARDING_COPY_LIMIT') ?? false;
  const deadline = Date.now() + 60_000;
  let failed = await failedDeliveries();
  while (failed.filter((delivery) => copyLimit(delivery.lastError)).length < 90 && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 100));
    failed = await failedDeliveries();
  }
  const refused = failed.filter((delivery) => copyLimit(delivery.lastError));
  assert.equal(refused.length, 90);
  assert.equal(
    refused[0]!.lastError,
    'FORWARDING_COPY_LIMIT: forwarding to 10 recipients would make 1000 copies of the message, more than 100',
  );
  const mail = await api.get(`/api/v2/mail?limit=1&domain=fan.test`);
  assert.equal(mail.body.pagination.total, 101);
});
