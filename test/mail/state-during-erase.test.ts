import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { startSecondInstance, startTestApp, type TestApp } from '../helpers/app.ts';
import { type DnsServer, startDnsServer } from '../helpers/dns-server.ts';
import { createVerifiedDomain } from '../helpers/domains.ts';
import { type ApiClient, apiClient } from '../helpers/http.ts';
import { sendMail } from '../helpers/smtp.ts';

let dns: DnsServer;
let first: TestApp;
let second: TestApp | undefined;
let api: ApiClient;
/** The same account through a second instance on the same schema (PostgreSQL), else through the first again. */
let other: ApiClient;

before(async () => {
  dns = await startDnsServer();
  first = await startTestApp({ DNS_SERVERS: dns.address });
  api = apiClient(first.baseUrl, first.apiKey);
  second = await startSecondInstance(first, { DNS_SERVERS: dns.address });
  other = second ? apiClient(second.baseUrl, first.apiKey) : api;
  const domain = await createVerifiedDomain(api, dns, 'state.test');
  assert.equal(
    (await api.post('/api/v2/email-addresses', { address: 'in@state.test', domainId: domain.id })).status,
    201,
  );
});
after(async () => {
  await second?.close();
  await first.close();
  await dns.close();
});

test('marking an email read, archived and unread while it is erased: each 200 or 404, never a 500', async () => {
  for (let round = 0; round < 12; round++) {
    const sent = await sendMail({ port: first.smtpPort, to: 'in@state.test', subject: `Round ${round}` });
    assert.equal(sent.code, 250, sent.response);
    const [id] = sent.queuedIds;
    const [read, archived, bulk, erased] = await Promise.all([
      other.patch(`/api/v2/mail/${id}`, { isRead: true }),
      api.patch(`/api/e2/emails/${id}`, { is_archived: true }),
      other.post('/api/v2/mail/bulk', { emailIds: [id], updates: { isRead: false } }),
      api.post('/api/v2/mail/erase', { emailId: id, includeArchived: true, expectedCount: 1 }),
    ]);
    assert.deepEqual([erased.status, erased.body.count], [200, 1], JSON.stringify(erased.body));
    if (read.status === 404) assert.deepEqual(read.body, { error: 'Email not found' });
    else assert.deepEqual([read.status, read.body.id], [200, id], JSON.stringify(read.body));
    if (archived.status === 404) assert.deepEqual(archived.body, { error: 'Email not found' });
    else assert.deepEqual([archived.status, archived.body.id], [200, id], JSON.stringify(archived.body));
    assert.equal(bulk.status, 200, JSON.stringify(bulk.body));
  }
  // Nothing is left, and the stored counts say so too.
  const left = await api.get('/api/v2/mail?includeArchived=true');
  assert.deepEqual([left.body.emails, left.body.pagination.total], [[], 0]);
});
