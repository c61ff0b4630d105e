import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { startTestApp, type TestApp } from '../helpers/app.ts';
import { type DnsServer, startDnsServer } from '../helpers/dns-server.ts';
import { createVerifiedDomain } from '../helpers/domains.ts';
import { type ApiClient, apiClient } from '../helpers/http.ts';
import { openSmtpConversation, sendMail } from '../helpers/smtp.ts';
import { startWebhookReceiver, type WebhookReceiver } from '../helpers/webhook-receiver.ts';

let dns: DnsServer;
let receiver: WebhookReceiver;
let server: TestApp;
let api: ApiClient;
let accountId: string;
/** Includes its subdomains, with a catch-all webhook endpoint on the receiver. */
let wild: { id: string };
let catchAll: { id: string };

before(async () => {
  dns = await startDnsServer();
  receiver = await startWebhookReceiver();
  server = await startTestApp({ DNS_SERVERS: dns.address });
  api = apiClient(server.baseUrl, server.apiKey);
  accountId = (await server.app.accounts.authenticate(server.apiKey))!.id;
  wild = await createVerifiedDomain(api, dns, 'wild.test');
  catchAll = (await api.post('/api/v2/endpoints', { name: 'Catch', type: 'webhook', config: { url: receiver.url } }))
    .body;
  const enabled = await api.patch(`/api/e2/domains/${wild.id}`, {
    isCatchAllEnabled: true,
    catchAllEndpointId: catchAll.id,
    includeSubdomains: true,
  });
  assert.equal(enabled.status, 200, JSON.stringify(enabled.body));
});
after(async () => {
  await server.close();
  await receiver.close();
  await dns.close();
});

/** The reply to RCPT TO:<recipient> in a fresh conversation. */
async function rcpt(recipient: string): Promise<string> {
  const smtp = await openSmtpConversation(server.smtpPort);
  await smtp.command('EHLO client.test');
  await smtp.command('MAIL FROM:<a@sender.test>');
  const reply = await smtp.command(`RCPT TO:<${recipient}>`);
  await smtp.quit();
  return reply;
}

describe('mail to subdomains of a root that includes them', () => {
  test('mail to any subdomain is accepted, stored under the root and delivered to its catch-all webhook', async () => {
    const sent = await sendMail({ port: server.smtpPort, to: 'x@any.sub.wild.test', subject: 'Deep', text: 'Hi' });
    assert.equal(sent.code, 250, sent.response);
    const [emailId] = sent.queuedIds;
    await receiver.waitForRequests(1);
    assert.equal(receiver.requests.length, 1);
    const payload = JSON.parse(receiver.requests[0]!.body);
    assert.deepEqual(
      [payload.email.id, payload.email.recipient, payload.email.subject, payload.endpoint.id],
      [emailId, 'x@any.sub.wild.test', 'Deep', catchAll.id],
    );
    const stored = await server.app.database.db
      .selectFrom('emails')
      .select(['domain_id', 'recipient'])
      .where('id', '=', emailId!)
      .executeTakeFirstOrThrow();
    assert.deepEqual({ ...stored }, { domain_id: wild.id, recipient: 'x@any.sub.wild.test' });
    assert.deepEqual(await server.app.router.resolve('X@Any.Sub.Wild.Test'), {
      accepted: true,
      recipient: 'x@any.sub.wild.test',
      accountId,
      domainId: wild.id,
      addressId: null,
      matchedBy: 'subdomain',
      target: { kind: 'endpoint', endpointId: catchAll.id, endpointType: 'webhook' },
    });
  });

  test('a subdomain registered on its own keeps its own routing', async () => {
    const own = await api.post('/api/v2/domains', { domain: 'own.wild.test' });
    assert.equal(own.body.status, 'verified');
    const address = await api.post('/api/v2/email-addresses', {
      address: 'hello@own.wild.test',
      domainId: own.body.id,
    });
    assert.equal(address.status, 201, JSON.stringify(address.body));
    assert.deepEqual(await server.app.router.resolve('hello@own.wild.test'), {
      accepted: true,
      recipient: 'hello@own.wild.test',
      accountId,
      domainId: own.body.id,
      addressId: address.body.id,
      matchedBy: 'address',
      target: { kind: 'none' },
    });
    assert.equal(
      await rcpt('nobody@own.wild.test'),
      '550 5.1.1 <nobody@own.wild.test>: Recipient address rejected: User unknown',
    );
    // A name below it is still the root's.
    assert.equal(await rcpt('x@deeper.own.wild.test'), '250 2.1.5 Accepted');
  });

  test('without a catch-all endpoint on the root, subdomain mail is accepted and stored only', async () => {
    const bare = await createVerifiedDomain(api, dns, 'bare.test');
    await api.put(`/api/v2/domains/${bare.id}`, { includeSubdomains: true });
    assert.deepEqual(await server.app.router.resolve('x@sub.bare.test'), {
      accepted: true,
      recipient: 'x@sub.bare.test',
      accountId,
      domainId: bare.id,
      addressId: null,
      matchedBy: 'subdomain',
      target: { kind: 'none' },
    });
    // The root's own unknown addresses are still refused: it has no catch-all.
    assert.equal(
      await rcpt('nobody@bare.test'),
      '550 5.1.1 <nobody@bare.test>: Recipient address rejected: User unknown',
    );
  });

  test('a root whose catch-all is switched off, its endpoint kept, stores subdomain mail only', async () => {
    const kept = await createVerifiedDomain(api, dns, 'kept.test');
    const on = await api.put(`/api/v2/domains/${kept.id}`, {
      isCatchAllEnabled: true,
      catchAllEndpointId: catchAll.id,
      includeSubdomains: true,
    });
    assert.equal(on.status, 200, JSON.stringify(on.body));
    const off = await api.put(`/api/v2/domains/${kept.id}`, { isCatchAllEnabled: false });
    assert.deepEqual([off.body.isCatchAllEnabled, off.body.catchAllEndpointId], [false, catchAll.id]);
    assert.deepEqual(await server.app.router.resolve('x@sub.kept.test'), {
      accepted: true,
      recipient: 'x@sub.kept.test',
      accountId,
      domainId: kept.id,
      addressId: null,
      matchedBy: 'subdomain',
      target: { kind: 'none' },
    });
  });

  test('mail to a subdomain of a verified root that does not include them is refused as relaying: 550 5.7.1', async () => {
    const plain = await createVerifiedDomain(api, dns, 'plain.test');
    await api.put(`/api/v2/domains/${plain.id}`, { isCatchAllEnabled: true, catchAllEndpointId: catchAll.id });
    assert.equal(await rcpt('x@sub.plain.test'), '550 5.7.1 Relaying denied');
    const sent = await sendMail({ port: server.smtpPort, to: 'x@sub.plain.test' });
    assert.equal(sent.code, 550, sent.response);
  });

  test('turning includeSubdomains off refuses subdomain mail again, and on accepts it again', async () => {
    assert.equal(await rcpt('again@sub.wild.test'), '250 2.1.5 Accepted');
    const off = await api.put(`/api/v2/domains/${wild.id}`, { includeSubdomains: false });
    assert.equal(off.status, 200);
    assert.equal(await rcpt('again@sub.wild.test'), '550 5.7.1 Relaying denied');
    // The root's own catch-all is untouched.
    assert.equal(await rcpt('again@wild.test'), '250 2.1.5 Accepted');
    const on = await api.patch(`/api/e2/domains/${wild.id}`, { includeSubdomains: true });
    assert.equal(on.status, 200);
    assert.equal(await rcpt('again@sub.wild.test'), '250 2.1.5 Accepted');
  });
});
