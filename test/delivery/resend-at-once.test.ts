import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { startSecondInstance, startTestApp, TEST_DATABASE_URL, type TestApp } from '../helpers/app.ts';
import { type DnsServer, startDnsServer } from '../helpers/dns-server.ts';
import { createVerifiedDomain } from '../helpers/domains.ts';
import { type ApiClient, apiClient } from '../helpers/http.ts';
import { type S3Server, startS3Server } from '../helpers/s3.ts';
import { sendMail } from '../helpers/smtp.ts';
import { startWebhookReceiver, type WebhookReceiver } from '../helpers/webhook-receiver.ts';
import { createWebhookEndpoint } from './setup.ts';

/** Requests that queue an email's delivery to an endpoint it never went to, made at once (two processes on PostgreSQL). */

let dns: DnsServer;
let hook: WebhookReceiver;
let s3: S3Server | undefined;
let first: TestApp;
let second: TestApp | undefined;
let api: ApiClient;
let other: ApiClient;

before(async () => {
  hook = await startWebhookReceiver();
  dns = await startDnsServer();
  // Both processes deliver, so on PostgreSQL they share a blob store, as processes on one database must.
  let blobStore: Record<string, string> = {};
  if (TEST_DATABASE_URL) {
    s3 = await startS3Server();
    const { AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, ...env } = s3.env;
    Object.assign(process.env, { AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY });
    blobStore = env;
  }
  first = await startTestApp({ DNS_SERVERS: dns.address, ...blobStore });
  api = apiClient(first.baseUrl, first.apiKey);
  second = await startSecondInstance(first, { DNS_SERVERS: dns.address, ...blobStore });
  other = second ? apiClient(second.baseUrl, first.apiKey) : api;
  const domain = await createVerifiedDomain(api, dns, 'resend.test');
  assert.equal(
    (await api.post('/api/v2/email-addresses', { address: 'in@resend.test', domainId: domain.id })).status,
    201,
  );
});
after(async () => {
  await second?.close();
  await first.close();
  await dns.close();
  await hook.close();
  await s3?.close();
});

const ALREADY_SUCCEEDED = 'Delivery already succeeded. Use resend to deliver again.';
const IN_FLIGHT = { error: 'Delivery is being attempted now: retry it once this attempt is recorded' };

test('resend and retry to a new endpoint at once: one delivery, each answer 200, 409 in flight or 400 done, no 500', async () => {
  const endpoint = await createWebhookEndpoint(api, 'Late hook', { url: hook.url });
  for (let round = 0; round < 8; round++) {
    const sent = await sendMail({ port: first.smtpPort, to: 'in@resend.test', subject: `Round ${round}` });
    assert.equal(sent.code, 250, sent.response);
    const [id] = sent.queuedIds;
    const answers = await Promise.all([
      api.post(`/api/v2/emails/${id}/resend`, { endpointId: endpoint.id }),
      other.post(`/api/v2/emails/${id}/resend`, { endpointId: endpoint.id }),
      other.post(`/api/e2/emails/${id}/retry`, { endpoint_id: endpoint.id }),
    ]);
    for (const [n, answer] of answers.entries()) {
      if (answer.status === 409) assert.deepEqual(answer.body, IN_FLIGHT);
      // The retry (not a resend) may come after a resend's delivery already went through.
      else if (n === 2 && answer.status === 400) assert.deepEqual(answer.body, { error: ALREADY_SUCCEEDED });
      else assert.equal(answer.status, 200, JSON.stringify(answer.body));
    }
    const deliveries = await api.get(`/api/v2/deliveries?emailId=${id}`);
    assert.deepEqual(
      deliveries.body.data.map((delivery: { endpointId: string }) => delivery.endpointId),
      [endpoint.id],
      `round ${round}`,
    );
  }
});

test('resend to a new endpoint while the email is erased: 200 or 404, and no delivery is left', async () => {
  const endpoint = await createWebhookEndpoint(api, 'Hook for the erased', { url: hook.url });
  for (let round = 0; round < 8; round++) {
    const sent = await sendMail({ port: first.smtpPort, to: 'in@resend.test', subject: `Erased ${round}` });
    assert.equal(sent.code, 250, sent.response);
    const [id] = sent.queuedIds;
    const [resent, erased] = await Promise.all([
      other.post(`/api/v2/emails/${id}/resend`, { endpointId: endpoint.id }),
      api.post('/api/v2/mail/erase', { emailId: id, includeArchived: true, expectedCount: 1 }),
    ]);
    assert.deepEqual([erased.status, erased.body.count], [200, 1], JSON.stringify(erased.body));
    if (resent.status === 404) assert.deepEqual(resent.body, { error: 'Email not found' });
    else assert.equal(resent.status, 200, JSON.stringify(resent.body));
    assert.deepEqual((await api.get(`/api/v2/deliveries?emailId=${id}`)).body.data, [], `round ${round}`);
  }
});
