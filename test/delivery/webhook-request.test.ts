import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, beforeEach, describe, test } from 'node:test';
import { Webhook } from 'standardwebhooks';
import { createHttpSender } from '../../src/delivery/http-sender.ts';
import { buildEmailReceivedPayload, MAX_PAYLOAD_BYTES, type PayloadEmail } from '../../src/delivery/index.ts';
import { buildWebhookRequest } from '../../src/delivery/webhook-request.ts';
import { createDnsLookup } from '../../src/dns/index.ts';
import type { WebhookTarget } from '../../src/endpoints/index.ts';
import { startWebhookReceiver, type WebhookReceiver } from '../helpers/webhook-receiver.ts';

const email: PayloadEmail = {
  id: 'email_01',
  recipient: 'support@acme.test',
  messageId: '<m1@sender.test>',
  subject: 'Invoice',
  from: { text: 'Ann <ann@sender.test>', addresses: [{ name: 'Ann', address: 'ann@sender.test' }] },
  to: { text: 'support@acme.test', addresses: [{ name: '', address: 'support@acme.test' }] },
  cc: null,
  bcc: null,
  replyTo: null,
  sentDate: '2026-11-22T01:00:00.000Z',
  inReplyTo: null,
  references: [],
  priority: null,
  textBody: 'Hello',
  htmlBody: '<p>Hello<script>alert(1)</script></p>',
  headers: { subject: 'Invoice' },
  attachments: [
    { filename: 'a.pdf', contentType: 'application/pdf', size: 3, contentId: null, contentDisposition: 'attachment' },
    { filename: 'b.png', contentType: 'image/png', size: 4, contentId: 'img1', contentDisposition: 'inline' },
  ],
  threadId: 'thr_1',
  threadPosition: 1,
  receivedAt: '2026-11-22T01:00:01.000Z',
};

/** The raw message `email` was parsed from, as `parsedData.raw` carries it. */
const RAW = 'From: Ann <ann@sender.test>\r\nTo: support@acme.test\r\nSubject: Invoice\r\n\r\nHello\r\n';

function target(overrides: Partial<WebhookTarget> = {}): WebhookTarget {
  return {
    kind: 'webhook',
    legacy: false,
    id: 'endp_1',
    accountId: 'acc_1',
    name: 'Hook',
    isActive: true,
    retryAttempts: 3,
    url: 'http://127.0.0.1:1/hook',
    headers: {},
    timeoutMs: 30_000,
    verificationToken: 'tok',
    ...overrides,
  };
}

const timestamp = new Date();

function request(overrides: Partial<WebhookTarget> = {}) {
  return buildWebhookRequest({
    target: target(overrides),
    email,
    raw: RAW,
    webhookId: 'dlv_1',
    timestamp,
    attachmentUrl: 'https://mail.example.test/api/e2/attachments/{emailId}/parts/{index}',
  });
}

describe('Standard Webhooks signing', () => {
  test('a whsec_ secret is used as its base64-decoded key and verifies with the standardwebhooks package', () => {
    const secret = `whsec_${Buffer.from('0123456789abcdef0123456789abcdef').toString('base64')}`;
    const built = request({ secret });
    const verified = new Webhook(secret).verify(built.body, built.headers) as { email: { id: string } };
    assert.equal(verified.email.id, 'email_01');
    assert.equal(built.headers['webhook-id'], 'dlv_1');
    assert.equal(built.headers['webhook-timestamp'], String(Math.floor(timestamp.getTime() / 1000)));
    assert.match(built.headers['webhook-signature']!, /^v1,[A-Za-z0-9+/]+=*$/);
  });

  test('any other secret is used as its UTF-8 bytes: verify with format raw', () => {
    const secret = 'plain secret ünïcode';
    const built = request({ secret });
    const verified = new Webhook(new TextEncoder().encode(secret), { format: 'raw' }).verify(built.body, built.headers);
    assert.ok(verified);
    assert.throws(() => new Webhook(Buffer.from('other').toString('base64')).verify(built.body, built.headers));
  });

  test('no secret: no webhook-signature, but webhook-id and webhook-timestamp are still sent', () => {
    const built = request();
    assert.equal(built.headers['webhook-signature'], undefined);
    assert.equal(built.headers['webhook-id'], 'dlv_1');
  });

  test('legacy webhooks also carry X-Webhook-Signature: sha256=<hex HMAC of the body> and X-Webhook-ID', () => {
    const built = request({ legacy: true, secret: 'legacy-secret' });
    const expected = createHmac('sha256', 'legacy-secret').update(built.body).digest('hex');
    assert.equal(built.headers['x-webhook-signature'], `sha256=${expected}`);
    assert.equal(built.headers['x-webhook-id'], 'dlv_1');
  });

  test('custom headers are sent and may override informational headers, but never the signing headers', () => {
    const secret = 'whsec_MDEyMzQ1Njc4OWFiY2RlZg==';
    const built = request({ secret, headers: { 'X-Custom': 'yes', 'User-Agent': 'mine', 'webhook-id': 'forged' } });
    assert.equal(built.headers['x-custom'], 'yes');
    assert.equal(built.headers['user-agent'], 'mine');
    assert.equal(built.headers['webhook-id'], 'dlv_1');
    assert.ok(new Webhook(secret).verify(built.body, built.headers));
  });

  test('custom headers cannot replace how the body is framed or where it goes', () => {
    const built = request({
      headers: { 'Content-Length': '1', 'Transfer-Encoding': 'chunked', Host: 'elsewhere.test', Connection: 'close' },
    });
    for (const name of ['content-length', 'transfer-encoding', 'host', 'connection']) {
      assert.equal(built.headers[name], undefined, name);
    }
  });

  test('a UTF-8 Message-ID is percent-encoded in X-Message-Id, which HTTP headers cannot carry as it is', () => {
    const built = buildWebhookRequest({
      target: target(),
      email: { ...email, messageId: '<邮件@例子.cn>' },
      raw: RAW,
      webhookId: 'dlv_1',
      timestamp,
      attachmentUrl: 'https://mail.example.test/api/e2/attachments/{emailId}/parts/{index}',
    });
    assert.equal(built.headers['x-message-id'], '<%E9%82%AE%E4%BB%B6@%E4%BE%8B%E5%AD%90.cn>');
    assert.equal(JSON.parse(built.body).email.messageId, '<邮件@例子.cn>');
  });

  test('X-Message-Id carries the first 998 characters of a Message-ID longer than a header line', () => {
    const messageId = `<${'m'.repeat(200_000)}@sender.test>`;
    const built = buildWebhookRequest({
      target: target(),
      email: { ...email, messageId },
      raw: RAW,
      webhookId: 'dlv_1',
      timestamp,
      attachmentUrl: 'https://mail.example.test/api/e2/attachments/{emailId}/parts/{index}',
    });
    assert.equal(built.headers['x-message-id'], messageId.slice(0, 998));
    assert.equal(JSON.parse(built.body).email.messageId, messageId);
  });
});

describe('email.received body', () => {
  test('spec headers and body fields; downloadUrl is PUBLIC_URL/api/e2/attachments/{emailId}/parts/{index}', () => {
    const built = request();
    assert.deepEqual(Object.fromEntries(Object.entries(built.headers).filter(([name]) => name.startsWith('x-'))), {
      'x-webhook-event': 'email.received',
      'x-endpoint-id': 'endp_1',
      'x-webhook-timestamp': timestamp.toISOString(),
      'x-email-id': 'email_01',
      'x-message-id': '<m1@sender.test>',
      'x-webhook-verification-token': 'tok',
    });
    const body = JSON.parse(built.body);
    assert.equal(body.event, 'email.received');
    assert.equal(body.timestamp, timestamp.toISOString());
    assert.deepEqual(body.endpoint, { id: 'endp_1', name: 'Hook', type: 'webhook' });
    assert.deepEqual(
      body.email.parsedData.attachments.map((a: { downloadUrl: string }) => a.downloadUrl),
      [
        'https://mail.example.test/api/e2/attachments/email_01/parts/0',
        'https://mail.example.test/api/e2/attachments/email_01/parts/1',
      ],
    );
    assert.equal(body.email.cleanedContent.html, '<p>Hello</p>');
    assert.equal(body.email.threadId, 'thr_1');
  });

  test('an unnamed attachment without a Content-ID has "" for both: the spec types them strings', () => {
    const built = buildWebhookRequest({
      target: target(),
      email: {
        ...email,
        attachments: [
          { filename: null, contentType: 'application/pdf', size: 3, contentId: null, contentDisposition: null },
        ],
      },
      raw: RAW,
      webhookId: 'dlv_1',
      timestamp,
      attachmentUrl: 'https://mail.example.test/api/e2/attachments/{emailId}/parts/{index}',
    });
    assert.deepEqual(JSON.parse(built.body).email.parsedData.attachments, [
      {
        filename: '',
        contentType: 'application/pdf',
        size: 3,
        contentId: '',
        contentDisposition: 'attachment',
        downloadUrl: 'https://mail.example.test/api/e2/attachments/email_01/parts/0',
      },
    ]);
  });

  test('parsedData leaves out inReplyTo and priority when the email has none (both clients type them string or absent)', () => {
    const body = JSON.parse(request().body);
    assert.deepEqual(Object.keys(body.email.parsedData), [
      'messageId',
      'date',
      'subject',
      'from',
      'to',
      'cc',
      'bcc',
      'replyTo',
      'references',
      'textBody',
      'htmlBody',
      'raw',
      'attachments',
      'headers',
    ]);
    const reply = buildEmailReceivedPayload({
      email: { ...email, inReplyTo: '<m0@sender.test>', priority: 'high' },
      raw: RAW,
      endpoint: { id: 'endp_1', name: 'Hook', type: 'webhook' },
      attachmentUrl: 'https://mail.example.test/a/{emailId}/{index}',
      timestamp,
    });
    const parsedData = JSON.parse(reply.body).email.parsedData;
    assert.equal(parsedData.inReplyTo, '<m0@sender.test>');
    assert.equal(parsedData.priority, 'high');
  });

  test('a message without Message-ID, Subject, From, To or Date: "" and empty address groups, no date, never null', () => {
    const bare = buildEmailReceivedPayload({
      email: { ...email, messageId: null, subject: null, from: null, to: null, sentDate: null },
      raw: RAW,
      endpoint: { id: 'endp_1', name: 'Hook', type: 'webhook' },
      attachmentUrl: 'https://mail.example.test/a/{emailId}/{index}',
      timestamp,
    });
    const body = JSON.parse(bare.body).email;
    const none = { text: '', addresses: [] };
    assert.deepEqual([body.messageId, body.subject, body.from, body.to], ['', '', none, none]);
    const { messageId, subject, from, to } = body.parsedData;
    assert.deepEqual([messageId, subject, from, to], ['', '', none, none]);
    assert.equal('date' in body.parsedData, false);
  });

  test('a body cut to fit 1 MB never ends in half an emoji, whatever the other fields make the cut fall on', () => {
    for (const subject of ['e', 'ee', 'eee', 'eeee']) {
      const built = buildEmailReceivedPayload({
        email: { ...email, subject, htmlBody: null, textBody: '😀'.repeat(300_000) },
        raw: RAW,
        endpoint: { id: 'endp_1', name: 'Hook', type: 'webhook' },
        attachmentUrl: 'https://mail.example.test/a/{emailId}/{index}',
        timestamp,
      });
      const textBody: string = JSON.parse(built.body).email.parsedData.textBody;
      assert.deepEqual([textBody.isWellFormed(), Buffer.byteLength(built.body) < MAX_PAYLOAD_BYTES], [true, true]);
      assert.ok(textBody.length > 0, subject);
    }
  });

  test('a body over 1 MB drops the header maps, then the HTML and text copies, then cuts the bodies', () => {
    const big = 'x'.repeat(700_000);
    const built = buildEmailReceivedPayload({
      email: { ...email, textBody: big, htmlBody: big },
      raw: RAW,
      endpoint: { id: 'endp_1', name: 'Hook', type: 'webhook' },
      attachmentUrl: 'https://mail.example.test/api/e2/attachments/{emailId}/parts/{index}',
      timestamp,
    });
    assert.ok(Buffer.byteLength(built.body) < MAX_PAYLOAD_BYTES);
    assert.deepEqual(built.trimmed, [
      'parsedData.headers',
      'cleanedContent.headers',
      'cleanedContent.html',
      'cleanedContent.text',
      'parsedData.raw',
      'parsedData.htmlBody',
    ]);
    const body = JSON.parse(built.body);
    assert.equal(body.email.parsedData.textBody, big);
    assert.equal(body.email.parsedData.raw, '');
  });

  test('a raw message over 1 MB loses its base64 bodies first, as Inbound trims it, and nothing else', () => {
    const base64 = Buffer.alloc(900_000, 7).toString('base64').replace(/.{76}/g, '$&\r\n');
    const raw = [
      'From: Ann <ann@sender.test>',
      'Content-Type: multipart/mixed; boundary="b"',
      '',
      '--b',
      'Content-Type: text/plain',
      '',
      'Hello',
      '--b',
      'Content-Type: application/pdf',
      'Content-Transfer-Encoding: base64',
      '',
      `${base64}`,
      '--b--',
      '',
    ].join('\r\n');
    const built = buildEmailReceivedPayload({
      email,
      raw,
      endpoint: { id: 'endp_1', name: 'Hook', type: 'webhook' },
      attachmentUrl: 'https://mail.example.test/a/{emailId}/{index}',
      timestamp,
    });
    assert.deepEqual(built.trimmed, ['parsedData.raw']);
    const { parsedData } = JSON.parse(built.body).email;
    const lastLine = base64.split('\r\n').at(-1);
    assert.equal(
      parsedData.raw,
      raw.replace(base64, `[binary attachment data removed - use Attachments API]\r\n${lastLine}`),
    );
    assert.deepEqual(parsedData.headers, email.headers);
  });

  test('a raw message too long to carry goes as "", and says so', () => {
    const built = buildEmailReceivedPayload({
      email,
      raw: null,
      endpoint: { id: 'endp_1', name: 'Hook', type: 'webhook' },
      attachmentUrl: 'https://mail.example.test/a/{emailId}/{index}',
      timestamp,
    });
    assert.deepEqual([JSON.parse(built.body).email.parsedData.raw, built.trimmed], ['', ['parsedData.raw']]);
  });

  test('a body cut to fit 1 MB fits even when its text is costlier at the start (CJK, then ASCII)', () => {
    const built = buildEmailReceivedPayload({
      email: { ...email, textBody: null, htmlBody: `${'日'.repeat(400_000)}${'x'.repeat(500_000)}` },
      raw: RAW,
      endpoint: { id: 'endp_1', name: 'Hook', type: 'webhook' },
      attachmentUrl: 'https://mail.example.test/a/{emailId}/{index}',
      timestamp,
    });
    assert.ok(Buffer.byteLength(built.body) < MAX_PAYLOAD_BYTES, `${Buffer.byteLength(built.body)} bytes`);
    assert.ok(Buffer.byteLength(built.body) > MAX_PAYLOAD_BYTES - 1000, 'the body is cut by what was over, not more');
    assert.equal(built.trimmed.at(-1), 'parsedData.htmlBody');
  });

  test('a body cut to fit 1 MB takes all the room left, whatever each character costs as JSON', () => {
    // One of each cost: 1, 2 (quote, backslash, newline, é), 3 (€, U+2028), 4 (an emoji), 6 (\u0001, a lone half).
    const mix = 'a"\\\né€\u2028😀\u0001\ud800';
    const textBody = mix.repeat(150_000);
    const built = buildEmailReceivedPayload({
      email: { ...email, htmlBody: null, textBody },
      raw: RAW,
      endpoint: { id: 'endp_1', name: 'Hook', type: 'webhook' },
      attachmentUrl: 'https://mail.example.test/a/{emailId}/{index}',
      timestamp,
    });
    const bytes = Buffer.byteLength(built.body);
    assert.ok(bytes < MAX_PAYLOAD_BYTES && bytes >= MAX_PAYLOAD_BYTES - 6, `${bytes} bytes`);
    const cut: string = JSON.parse(built.body).email.parsedData.textBody;
    assert.ok(cut.length > 0 && textBody.startsWith(cut));
    assert.deepEqual(built.trimmed, [
      'parsedData.headers',
      'cleanedContent.headers',
      'cleanedContent.text',
      'parsedData.raw',
      'parsedData.textBody',
    ]);
  });

  test('HTML whose JSON alone passes 1 MB: its sanitized copy is dropped as any other, then the body cut', () => {
    const htmlBody = '<p onclick="x()">a</p>'.repeat(50_000);
    const built = buildEmailReceivedPayload({
      email: { ...email, textBody: null, htmlBody },
      raw: RAW,
      endpoint: { id: 'endp_1', name: 'Hook', type: 'webhook' },
      attachmentUrl: 'https://mail.example.test/a/{emailId}/{index}',
      timestamp,
    });
    const body = JSON.parse(built.body).email;
    assert.deepEqual(
      [body.cleanedContent.html, body.cleanedContent.hasHtml, htmlBody.startsWith(body.parsedData.htmlBody)],
      [null, true, true],
    );
    assert.deepEqual(built.trimmed, [
      'parsedData.headers',
      'cleanedContent.headers',
      'cleanedContent.html',
      'parsedData.raw',
      'parsedData.htmlBody',
    ]);
  });

  test('every field long at once, in characters JSON escapes: still under 1 MB, every field its type, all reported', () => {
    // A control character takes 6 bytes as JSON (\u0001), the most a character can.
    const long = (prefix: string, count = 300_000) => `${prefix}${'\u0001'.repeat(count)}`;
    const group = (prefix: string) => ({
      text: long(prefix),
      addresses: Array.from({ length: 50 }, (_, i) => ({ name: long('N', 1_001), address: `${prefix}${i}@x.test` })),
    });
    const many = Array.from({ length: 20_000 }, (_, i) => ({
      filename: i === 0 ? long('f', 1_001) : `file${i}.pdf`,
      contentType: i === 0 ? long('t', 1_001) : 'application/pdf',
      size: 1,
      contentId: i === 0 ? long('c', 1_001) : '',
      contentDisposition: 'attachment',
    }));
    const built = buildEmailReceivedPayload({
      email: {
        ...email,
        subject: long('s'),
        messageId: long('<m'),
        inReplyTo: long('<r'),
        references: Array.from({ length: 20_000 }, (_, i) => `<ref${i}@x.test>`),
        from: group('from'),
        to: group('to'),
        cc: group('cc'),
        bcc: group('bcc'),
        replyTo: group('replyTo'),
        attachments: many,
        textBody: long('text'),
        htmlBody: long('html'),
      },
      raw: RAW,
      endpoint: { id: 'endp_1', name: 'Hook', type: 'webhook' },
      attachmentUrl: 'https://mail.example.test/a/{emailId}/{index}',
      timestamp,
    });
    assert.ok(Buffer.byteLength(built.body) < MAX_PAYLOAD_BYTES, `${Buffer.byteLength(built.body)} bytes`);
    const body = JSON.parse(built.body).email;
    const { parsedData } = body;
    for (const value of [body.subject, body.messageId, parsedData.subject, parsedData.messageId, parsedData.inReplyTo])
      assert.deepEqual([typeof value, [...value].length], ['string', 1000]);
    for (const value of [body.from, body.to, parsedData.cc, parsedData.bcc, parsedData.replyTo]) {
      assert.deepEqual(Object.keys(value), ['text', 'addresses']);
      assert.match(value.text, /… \(\d+ more addresses left out\)$/);
      assert.ok(value.addresses.length > 0 && value.addresses.length < 50);
      assert.equal([...value.addresses[0].name].length, 1000);
    }
    assert.ok(parsedData.references.length > 0 && parsedData.references.length < 20_000);
    assert.ok(parsedData.attachments.length > 1 && parsedData.attachments.length < 20_000);
    assert.equal([...parsedData.attachments[0].filename].length, 1000);
    assert.deepEqual(body.cleanedContent.attachments, parsedData.attachments);
    assert.equal(parsedData.attachments[1].downloadUrl, 'https://mail.example.test/a/email_01/1');
    assert.deepEqual(built.trimmed, [
      'parsedData.headers',
      'cleanedContent.headers',
      'cleanedContent.html',
      'cleanedContent.text',
      'parsedData.raw',
      'subject',
      'parsedData.subject',
      'messageId',
      'parsedData.messageId',
      'parsedData.inReplyTo',
      'parsedData.references',
      'from',
      'parsedData.from',
      'to',
      'parsedData.to',
      'parsedData.cc',
      'parsedData.bcc',
      'parsedData.replyTo',
      'parsedData.attachments',
      'cleanedContent.attachments',
      'parsedData.htmlBody',
      'parsedData.textBody',
    ]);
  });
});

describe('HTTP sending', () => {
  let receiver: WebhookReceiver;
  const dns = createDnsLookup([]);
  const open = createHttpSender(() => undefined, dns);
  const guarded = createHttpSender(
    (ip) => (ip.startsWith('127.') ? 'loopback addresses are not allowed' : undefined),
    dns,
  );

  before(async () => {
    receiver = await startWebhookReceiver();
  });
  after(async () => {
    open.close();
    guarded.close();
    await receiver.close();
  });
  beforeEach(() => receiver.clear());

  const post = (url: string, timeoutMs = 5000) => ({
    url,
    headers: { 'content-type': 'application/json' },
    body: '{}',
    timeoutMs,
  });

  test('redirects are not followed: a 302 is the outcome', async () => {
    receiver.answer({ status: 302, headers: { location: 'http://127.0.0.1:1/elsewhere' } });
    const outcome = await open.post(post(receiver.url));
    assert.equal(outcome.statusCode, 302);
    assert.equal(receiver.requests.length, 1);
  });

  test('the response body is kept to its first 2,000 characters', async () => {
    receiver.answer({ status: 500, body: 'e'.repeat(5000) });
    const outcome = await open.post(post(receiver.url));
    assert.equal(outcome.body, 'e'.repeat(2000));
  });

  test('a header HTTP cannot carry fails the attempt for good instead of throwing', async () => {
    const outcome = await open.post({ ...post(receiver.url), headers: { 'x-a': 'v\r\nx-injected: 1' } });
    assert.deepEqual(outcome, {
      headers: {},
      body: '',
      durationMs: 0,
      error: 'Invalid character in header content ["x-a"]',
      blocked: true,
    });
    assert.equal(receiver.requests.length, 0);
  });

  test('a receiver that never answers times out with the reference message', async () => {
    receiver.answer('hang');
    const outcome = await open.post(post(receiver.url, 300));
    assert.equal(outcome.statusCode, undefined);
    assert.equal(outcome.error, 'Request timeout after 0.3s');
  });

  test('a 200 whose body is still arriving at the timeout counts as a 200, with the body read so far', async () => {
    const trickling = createServer((request, response) => {
      request.resume();
      response.writeHead(200, { 'content-type': 'text/plain' });
      response.write('accepted');
    });
    await new Promise<void>((resolve) => trickling.listen(0, '127.0.0.1', resolve));
    try {
      const { port } = trickling.address() as AddressInfo;
      const outcome = await open.post(post(`http://127.0.0.1:${port}/hook`, 300));
      assert.deepEqual([outcome.statusCode, outcome.body, outcome.error], [200, 'accepted', undefined]);
    } finally {
      trickling.closeAllConnections();
      trickling.close();
    }
  });

  test('the SSRF guard applies to the resolved address of a host name, not only to IP literals', async () => {
    const byName = await guarded.post(post(`http://localhost:${receiver.port}/hook`));
    assert.equal(byName.blocked, true);
    assert.match(byName.error!, /^localhost resolves to 127\.0\.0\.1: loopback addresses are not allowed$/);
    const literal = await guarded.post(post(receiver.url));
    assert.equal(literal.blocked, true);
    assert.equal(receiver.requests.length, 0);
  });
});
