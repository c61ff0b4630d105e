import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, test } from 'node:test';
import { startTestApp, type TestApp } from '../helpers/app.ts';
import type { DnsServer } from '../helpers/dns-server.ts';
import { createVerifiedDomain } from '../helpers/domains.ts';
import { type ApiClient, apiClient } from '../helpers/http.ts';
import { sendMail } from '../helpers/smtp.ts';
import {
  createForwardEndpoint,
  type DeliveryWorld,
  routeAddress,
  startDeliveryWorld,
  waitForDelivery,
} from './setup.ts';
import { type SmtpSink, startSmtpSink } from './smtp-sink.ts';

let world: DeliveryWorld;
let dns: DnsServer;
let sink: SmtpSink;
let server: TestApp;
let api: ApiClient;
let domainId: string;
let counter = 0;

before(async () => {
  sink = await startSmtpSink();
  world = await startDeliveryWorld('fwd.test', { SMTP_RELAY_URL: sink.url });
  ({ dns, server, api, domainId } = world);
});
after(async () => {
  await world.close();
  await sink.close();
});
beforeEach(() => sink.clear());

async function forwardingAddress(type: 'email' | 'email_group', config: Record<string, unknown>, local?: string) {
  counter++;
  const address = `${local ?? `fwd${counter}`}@fwd.test`;
  const endpoint = await createForwardEndpoint(api, `Forward ${counter}`, type, config);
  await routeAddress(api, address, domainId, { endpointId: endpoint.id });
  return { address, endpoint };
}

async function deliver(to: string, options: Partial<Parameters<typeof sendMail>[0]> = {}) {
  const sent = await sendMail({
    port: server.smtpPort,
    from: 'ann@sender.test',
    to,
    subject: 'Quarterly report',
    text: 'Numbers attached.',
    ...options,
  });
  assert.equal(sent.code, 250, sent.response);
  return sent.queuedIds[0]!;
}

describe('forwarding through a relay (SMTP_RELAY_URL) on loopback', () => {
  test('the message is rebuilt: From "<name> via <domain>", Reply-To the sender, prefixed subject, thread headers, attachments', async () => {
    const { address } = await forwardingAddress('email', { forwardTo: 'boss@elsewhere.test', subjectPrefix: '[Fwd]' });
    const emailId = await deliver(address, {
      raw: [
        'From: Ann Sender <ann@sender.test>',
        `To: ${address}`,
        'Subject: Quarterly report',
        'Message-ID: <q3@sender.test>',
        'References: <q2@sender.test>',
        'MIME-Version: 1.0',
        'Content-Type: multipart/mixed; boundary="b1"',
        '',
        '--b1',
        'Content-Type: text/plain; charset=utf-8',
        '',
        'Numbers attached.',
        '--b1',
        'Content-Type: application/pdf; name="q3.pdf"',
        'Content-Disposition: attachment; filename="q3.pdf"',
        'Content-Transfer-Encoding: base64',
        '',
        Buffer.from('%PDF-1.4 fake').toString('base64'),
        '--b1--',
        '',
      ].join('\r\n'),
    });
    await sink.waitForMessages(1);
    const [message] = sink.messages;
    assert.deepEqual(message!.rcptTo, ['boss@elsewhere.test']);
    assert.equal(message!.mailFrom, address);
    const parsed = message!.parsed;
    assert.deepEqual(parsed.from?.value, [{ name: 'Ann Sender via fwd.test', address }]);
    assert.deepEqual(parsed.replyTo?.value, [{ name: 'Ann Sender', address: 'ann@sender.test' }]);
    assert.equal(parsed.subject, '[Fwd] Quarterly report');
    assert.equal(parsed.inReplyTo, '<q3@sender.test>');
    assert.deepEqual(parsed.references, ['<q2@sender.test>', '<q3@sender.test>']);
    assert.equal(parsed.headers.get('x-mailroom-hops'), '1');
    assert.equal(parsed.text?.trim(), 'Numbers attached.');
    assert.deepEqual(
      parsed.attachments.map((a) => [a.filename, a.contentType, a.content.toString()]),
      [['q3.pdf', 'application/pdf', '%PDF-1.4 fake']],
    );
    const delivery = await waitForDelivery(api, emailId);
    assert.equal(delivery.status, 'success');
    assert.deepEqual(
      delivery.attemptLog[0]!.recipients!.map((r) => [r.address, r.status]),
      [['boss@elsewhere.test', 'sent']],
    );
  });

  test('a message the parser gave up on part way is forwarded with the attachments the API lists, no more', async () => {
    const { address } = await forwardingAddress('email', { forwardTo: 'boss@elsewhere.test' });
    // The last part's header brings the parts' headers past their 1 MB together: parsing stops before it.
    const padding = `X-Padding: ${'p'.repeat(70)}${`\r\n ${'p'.repeat(70)}`.repeat(8_000)}`;
    const part = (name: string, headers = '') =>
      `--b1\r\nContent-Type: application/octet-stream\r\nContent-Disposition: attachment; filename="${name}"\r\n${headers}\r\n${name}\r\n`;
    const emailId = await deliver(address, {
      raw: [
        `From: Ann Sender <ann@sender.test>\r\nTo: ${address}\r\nSubject: Padded\r\nMIME-Version: 1.0`,
        'Content-Type: multipart/mixed; boundary="b1"\r\n',
        `--b1\r\nContent-Type: text/plain\r\n\r\nThree files.\r\n${part('one.bin')}${part('two.bin', `${padding}\r\n`)}${part('three.bin', `${padding}\r\n`)}--b1--\r\n`,
      ].join('\r\n'),
    });
    const listed = await api.get(`/api/e2/attachments/${emailId}`);
    assert.deepEqual(
      listed.body.data.map((attachment: { filename: string }) => attachment.filename),
      ['one.bin', 'two.bin'],
    );
    await sink.waitForMessages(1);
    assert.deepEqual(
      sink.messages[0]!.parsed.attachments.map((a) => [a.filename, a.content.toString()]),
      [
        ['one.bin', 'one.bin'],
        ['two.bin', 'two.bin'],
      ],
    );
  });

  test('a message with its own Reply-To keeps it: replies go where its sender asked', async () => {
    const { address } = await forwardingAddress('email', { forwardTo: 'boss@elsewhere.test' });
    await deliver(address, {
      raw: [
        'From: Vendor <noreply@vendor.test>',
        'Reply-To: Tickets <tickets@vendor.test>, backup@vendor.test',
        `To: ${address}`,
        'Subject: Ticket 42',
        '',
        'Reply above this line.',
        '',
      ].join('\r\n'),
    });
    await sink.waitForMessages(1);
    assert.deepEqual(sink.messages[0]!.parsed.replyTo?.value, [
      { name: 'Tickets', address: 'tickets@vendor.test' },
      { name: '', address: 'backup@vendor.test' },
    ]);
  });

  test('fromAddress and senderName replace the From; includeAttachments false leaves attachments out', async () => {
    const { address } = await forwardingAddress('email', {
      forwardTo: 'boss@elsewhere.test',
      fromAddress: 'robot@fwd.test',
      senderName: 'Mail Robot',
      includeAttachments: false,
    });
    await deliver(address, { attachments: [{ filename: 'a.txt', content: 'aaa' }] });
    await sink.waitForMessages(1);
    const parsed = sink.messages[0]!.parsed;
    assert.deepEqual(parsed.from?.value, [{ name: 'Mail Robot', address: 'robot@fwd.test' }]);
    assert.equal(parsed.subject, 'Quarterly report');
    assert.deepEqual(parsed.attachments, []);
  });

  test('a bounce (null reverse-path) is forwarded as one, so that its own failure cannot bounce back here', async () => {
    const { address } = await forwardingAddress('email', { forwardTo: 'boss@elsewhere.test' });
    const emailId = await deliver(address, { from: '', subject: 'Undelivered Mail Returned to Sender' });
    assert.equal((await waitForDelivery(api, emailId)).status, 'success');
    assert.deepEqual(
      sink.messages.map((m) => [m.mailFrom, m.rcptTo, m.parsed.subject]),
      [['', ['boss@elsewhere.test'], 'Undelivered Mail Returned to Sender']],
    );
  });

  test('forwarding to the receiving address itself is refused as a loop, and nothing is sent', async () => {
    const { address } = await forwardingAddress(
      'email',
      { forwardTo: `loop${counter + 1}@fwd.test` },
      `loop${counter + 1}`,
    );
    const emailId = await deliver(address);
    const delivery = await waitForDelivery(api, emailId);
    assert.equal(delivery.status, 'failed');
    assert.equal(delivery.attempts, 1);
    assert.match(delivery.lastError!, /FORWARDING_LOOP_DETECTED/);
    assert.equal(sink.messages.length, 0);
  });

  test('a message that already passed through Mailroom 5 times is not forwarded again (hop limit)', async () => {
    const { address } = await forwardingAddress('email', { forwardTo: 'boss@elsewhere.test' });
    const emailId = await deliver(address, { headers: { 'X-Mailroom-Hops': '5' } });
    const delivery = await waitForDelivery(api, emailId);
    assert.equal(delivery.status, 'failed');
    assert.match(delivery.lastError!, /^FORWARDING_HOP_LIMIT/);
    assert.equal(sink.messages.length, 0);
  });

  test('a 5-member group gets one message each, and every recipient outcome is recorded', async () => {
    const members = ['a', 'b', 'c', 'd', 'e'].map((name) => `${name}@team.test`);
    const { address } = await forwardingAddress('email_group', { emails: members, subjectPrefix: 'Team:' });
    const emailId = await deliver(address);
    await sink.waitForMessages(5);
    assert.deepEqual(sink.messages.map((m) => m.rcptTo[0]).sort(), members);
    assert.ok(sink.messages.every((m) => m.parsed.subject === 'Team: Quarterly report'));
    const delivery = await waitForDelivery(api, emailId);
    assert.equal(delivery.status, 'success');
    assert.deepEqual(
      delivery.attemptLog[0]!.recipients!.map((r) => [r.address, r.status]),
      members.map((member) => [member, 'sent']),
    );
  });

  test('a temporary refusal (451) is retried for that member only; the others are not sent twice', async () => {
    const members = ['x@team.test', 'y@team.test', 'z@team.test'];
    const { address } = await forwardingAddress('email_group', { emails: members });
    sink.refuse('y@team.test', 451, 1);
    const emailId = await deliver(address);
    const delivery = await waitForDelivery(api, emailId);
    assert.equal(delivery.status, 'success');
    assert.equal(delivery.attempts, 2);
    assert.deepEqual(
      delivery.attemptLog.map((a) => a.recipients!.map((r) => [r.address, r.status])),
      [
        [
          ['x@team.test', 'sent'],
          ['y@team.test', 'failed'],
          ['z@team.test', 'sent'],
        ],
        [
          ['x@team.test', 'skipped'],
          ['z@team.test', 'skipped'],
          ['y@team.test', 'sent'],
        ],
      ],
    );
    assert.deepEqual(sink.messages.map((m) => m.rcptTo[0]).sort(), members);
  });

  test('a member that was sent the message, removed and added back before a retry, is not sent it twice', async () => {
    const { address, endpoint } = await forwardingAddress('email_group', { emails: ['m1@team.test', 'm2@team.test'] });
    sink.refuse('m2@team.test', 550, 2);
    const emailId = await deliver(address);
    const first = await waitForDelivery(api, emailId);
    assert.deepEqual([first.status, first.attempts], ['failed', 1]);
    const retry = async (emails: string[], attempts: number) => {
      const changed = await api.put(`/api/v2/endpoints/${endpoint.id}`, { config: { emails } });
      assert.equal(changed.status, 200, JSON.stringify(changed.body));
      const retried = await api.post(`/api/v2/emails/${emailId}/retry-delivery`, { deliveryId: first.id });
      assert.equal(retried.status, 200, JSON.stringify(retried.body));
      return waitForDelivery(api, emailId, (d) => d.attempts === attempts && d.status !== 'pending');
    };
    assert.equal((await retry(['m2@team.test'], 2)).status, 'failed');
    const last = await retry(['m1@team.test', 'm2@team.test'], 3);
    assert.deepEqual(
      [last.status, last.attemptLog[2]!.recipients!.map((r) => [r.address, r.status])],
      [
        'success',
        [
          ['m1@team.test', 'skipped'],
          ['m2@team.test', 'sent'],
        ],
      ],
    );
    assert.deepEqual(sink.messages.map((m) => m.rcptTo[0]).sort(), ['m1@team.test', 'm2@team.test']);
  });

  test('POST /emails/{id}/resend sends a forward that succeeded to every member again, not "skipped"', async () => {
    const members = ['r1@team.test', 'r2@team.test'];
    const { address, endpoint } = await forwardingAddress('email_group', { emails: members });
    const emailId = await deliver(address);
    assert.equal((await waitForDelivery(api, emailId)).status, 'success');
    const resent = await api.post(`/api/v2/emails/${emailId}/resend`, { endpointId: endpoint.id });
    assert.equal(resent.status, 200, JSON.stringify(resent.body));
    const delivery = await waitForDelivery(api, emailId, (d) => d.attempts === 2 && d.status === 'success');
    assert.deepEqual(
      delivery.attemptLog[1]!.recipients!.map((r) => [r.address, r.status]),
      members.map((member) => [member, 'sent']),
    );
    assert.deepEqual(sink.messages.map((m) => m.rcptTo[0]).sort(), [...members, ...members].sort());
  });

  test('a permanent refusal (550) fails the delivery without retrying', async () => {
    const { address } = await forwardingAddress('email', { forwardTo: 'nobody@elsewhere.test' });
    sink.refuse('nobody@elsewhere.test', 550, 5);
    const emailId = await deliver(address);
    const delivery = await waitForDelivery(api, emailId);
    assert.equal(delivery.status, 'failed');
    assert.equal(delivery.attempts, 1);
    assert.match(delivery.lastError!, /^nobody@elsewhere\.test: .*550/);
  });
});

test('a fromAddress on a domain the account deleted, which another account verified since, is not sent as', async () => {
  const gone = await createVerifiedDomain(api, dns, 'gone.test');
  const { address } = await forwardingAddress('email', {
    forwardTo: 'boss@elsewhere.test',
    fromAddress: 'robot@gone.test',
    senderName: 'Robot',
  });
  assert.equal((await api.delete(`/api/v2/domains/${gone.id}`)).status, 200);
  await createVerifiedDomain(apiClient(server.baseUrl, await server.newAccountKey('gone-new-owner')), dns, 'gone.test');
  await deliver(address);
  await sink.waitForMessages(1);
  const [message] = sink.messages;
  assert.deepEqual([message!.mailFrom, message!.parsed.from?.value], [address, [{ name: 'Robot', address }]]);
});

describe('POST /endpoints/{id}/test on a forwarding endpoint', () => {
  test('sends a test message to every member and reports success', async () => {
    sink.clear();
    const endpoint = await createForwardEndpoint(api, 'Test group', 'email_group', {
      emails: ['p@team.test', 'q@team.test'],
      subjectPrefix: '[Test]',
    });
    const result = await api.post(`/api/v2/endpoints/${endpoint.id}/test`);
    assert.equal(result.status, 200, JSON.stringify(result.body));
    assert.equal(result.body.success, true);
    assert.equal(result.body.statusCode, 250);
    assert.equal(result.body.message, 'Test email sent to p@team.test, q@team.test');
    assert.deepEqual(sink.messages.map((m) => m.rcptTo[0]).sort(), ['p@team.test', 'q@team.test']);
    assert.equal(sink.messages[0]!.parsed.subject, '[Test] Test webhook from Mailroom');
    // Sent as a forward is, from the account's own verified domain: no address is routed to it yet.
    assert.deepEqual(
      [sink.messages[0]!.mailFrom, sink.messages[0]!.parsed.from?.value],
      ['test@fwd.test', [{ name: 'Mailroom Test via fwd.test', address: 'test@fwd.test' }]],
    );

    sink.clear();
    await routeAddress(api, 'desk@fwd.test', domainId, { endpointId: endpoint.id });
    assert.equal((await api.post(`/api/v2/endpoints/${endpoint.id}/test`)).body.success, true);
    assert.deepEqual(
      sink.messages.map((m) => m.mailFrom),
      ['desk@fwd.test', 'desk@fwd.test'],
    );
  });

  test('an account without a verified domain is told it has none to send from, and nothing is sent', async () => {
    sink.clear();
    const other = apiClient(server.baseUrl, await server.newAccountKey('no-domain'));
    const endpoint = await createForwardEndpoint(other, 'Lonely', 'email', { forwardTo: 'p@team.test' });
    const result = await other.post(`/api/v2/endpoints/${endpoint.id}/test`);
    const error = 'No verified domain to send from: a forward is sent from the receiving address, on a verified domain';
    assert.deepEqual(
      [result.status, result.body.success, result.body.error, result.body.message],
      [200, false, error, `Email test failed: ${error}`],
    );
    assert.equal(sink.messages.length, 0);
  });
});

describe('forwarding by direct MX delivery (no SMTP_RELAY_URL)', () => {
  let mx: SmtpSink;
  let direct: TestApp;
  let directApi: ApiClient;
  before(async () => {
    mx = await startSmtpSink();
    direct = await startTestApp({ DNS_SERVERS: dns.address, FORWARD_MX_PORT: String(mx.port) });
    directApi = apiClient(direct.baseUrl, direct.apiKey);
  });
  after(async () => {
    await direct.close();
    await mx.close();
  });
  beforeEach(() => mx.clear());

  /** Routes in@`domain` to a forward to `forwardTo`, sends it one message, and returns its delivery once done. */
  async function forwardOnce(domain: string, forwardTo: string, subject: string) {
    const { id } = await createVerifiedDomain(directApi, dns, domain);
    const endpoint = await createForwardEndpoint(directApi, subject, 'email', { forwardTo });
    await routeAddress(directApi, `in@${domain}`, id, { endpointId: endpoint.id });
    const sent = await sendMail({ port: direct.smtpPort, from: 'ann@sender.test', to: `in@${domain}`, subject });
    assert.equal(sent.code, 250, sent.response);
    return waitForDelivery(directApi, sent.queuedIds[0]!);
  }

  test("the message goes to the recipient domain's MX host, found through DNS", async () => {
    dns.set('partner.test', [{ type: 'MX', exchange: '127.0.0.1', priority: 10 }]);
    const delivery = await forwardOnce('direct.test', 'ops@partner.test', 'Direct');
    assert.equal(delivery.status, 'success', JSON.stringify(delivery.attemptLog));
    assert.deepEqual(mx.messages[0]!.rcptTo, ['ops@partner.test']);
    assert.equal(mx.messages[0]!.parsed.subject, 'Direct');
  });

  test('a recipient domain in Unicode is looked up, and addressed, in its ASCII form', async () => {
    dns.set('xn--bcher-kva.test', [{ type: 'MX', exchange: '127.0.0.1', priority: 10 }]);
    const delivery = await forwardOnce('idn.test', 'leser@bücher.test', 'IDN');
    assert.equal(delivery.status, 'success', JSON.stringify(delivery.attemptLog));
    // The sink's smtp-server shows the domain in Unicode whichever form came on the wire.
    assert.deepEqual(mx.messages[0]!.rcptTo, ['leser@bücher.test']);
    assert.equal(mx.messages[0]!.smtpUtf8, false);
    assert.equal(mx.messages[0]!.parsed.subject, 'IDN');
  });
});
