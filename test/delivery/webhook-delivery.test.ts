import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { createServer as createHttpServer } from 'node:http';
import { type AddressInfo, createServer as createTcpServer } from 'node:net';
import { after, before, beforeEach, describe, test } from 'node:test';
import { Webhook } from 'standardwebhooks';
import * as SchemaCheck from 'typebox/schema';
import type { TestApp } from '../helpers/app.ts';
import type { ApiClient } from '../helpers/http.ts';
import { sendMail } from '../helpers/smtp.ts';
import { startWebhookReceiver, type WebhookReceiver } from '../helpers/webhook-receiver.ts';
import {
  type DeliveryView,
  type DeliveryWorld,
  routeAddress,
  routeToWebhook,
  startDeliveryWorld,
  waitForDelivery,
} from './setup.ts';

/** The body size receivers and proxies commonly refuse (1 MB): every webhook body must stay under it. */
const RECEIVER_LIMIT = 1_000_000;
const SECRET = `whsec_${Buffer.from('mailroom-webhook-test-secret-32b').toString('base64')}`;

let world: DeliveryWorld;
let server: TestApp;
let api: ApiClient;
let receiver: WebhookReceiver;
let domainId: string;

before(async () => {
  receiver = await startWebhookReceiver();
  world = await startDeliveryWorld('hooks.test', { PUBLIC_URL: 'https://mail.example.test' });
  ({ server, api, domainId } = world);
});
after(async () => {
  await receiver.close();
  await world.close();
});
beforeEach(() => receiver.clear());

/** A fresh address routed to a fresh webhook endpoint with `config` merged over the receiver's URL. */
const webhookAddress = (config: Record<string, unknown> = {}) => routeToWebhook(world, 'Hook', receiver.url, config);

async function deliver(to: string, extra: Parameters<typeof sendMail>[0] extends infer O ? Partial<O> : never = {}) {
  const sent = await sendMail({
    port: server.smtpPort,
    from: 'ann@sender.test',
    to,
    subject: 'Hello',
    text: 'Hi there',
    ...extra,
  });
  assert.equal(sent.code, 250, sent.response);
  assert.equal(sent.queuedIds.length, 1);
  return sent.queuedIds[0]!;
}

describe('webhook delivery end to end (SMTP in, loopback receiver out)', () => {
  test('the HTML a webhook carries is sanitized as the mail API presents it, on the first attempt as on a retry', async () => {
    const part =
      '<div style="color:red" onclick="steal()">Hi <b>there</b><script>alert(1)</script>' +
      '<a href="javascript:alert(2)">x</a><img src="cid:logo" onerror="x()"></div>';
    const cleanedPart = '<div style="color:red">Hi <b>there</b><a>x</a><img src="cid:logo" /></div>';
    // Once, and 1,500 times (261 KB, which the mail API sanitizes on a thread of its own).
    for (const times of [1, 1_500]) {
      receiver.clear();
      const { address } = await webhookAddress();
      receiver.answer({ status: 500 }, { status: 200 });
      const [html, sanitized] = [part.repeat(times), cleanedPart.repeat(times)];
      const emailId = await deliver(address, { html });
      await receiver.waitForRequests(2);
      // The first attempt ran the job as ingest handed it over; the retry was claimed from the outbox.
      const [first, retried] = receiver.requests.map((request) => JSON.parse(request.body).email);
      assert.equal(first.parsedData.htmlBody, html);
      assert.equal(first.cleanedContent.html, sanitized);
      assert.equal(retried.cleanedContent.html, sanitized);
      const read = await api.get(`/api/v2/mail/${emailId}`);
      assert.equal(read.status, 200, JSON.stringify(read.body).slice(0, 200));
      assert.equal(read.body.htmlBody, sanitized);
    }
  });

  test('the receiver gets the spec body and headers, signed (standardwebhooks verifies) with the endpoint token', async () => {
    const { endpoint, address } = await webhookAddress({ secret: SECRET, headers: { 'X-Tenant': 'acme' } });
    const emailId = await deliver(address, {
      messageId: '<first@sender.test>',
      attachments: [{ filename: 'notes.txt', content: 'attached bytes', contentType: 'text/plain' }],
    });
    await receiver.waitForRequests(1);
    const [request] = receiver.requests;
    assert.equal(request!.method, 'POST');
    assert.equal(request!.path, '/hook');
    const headers = request!.headers;
    const read = await api.get(`/api/v2/endpoints/${endpoint.id}`);
    assert.equal(headers['x-webhook-verification-token'], read.body.config.verificationToken);
    assert.match(String(headers['x-webhook-verification-token']), /^[0-9a-f]{64}$/);
    assert.equal(headers['x-endpoint-id'], endpoint.id);
    assert.equal(headers['x-webhook-event'], 'email.received');
    assert.equal(headers['x-email-id'], emailId);
    assert.equal(headers['x-message-id'], '<first@sender.test>');
    assert.equal(headers['x-tenant'], 'acme');
    assert.equal(headers['content-type'], 'application/json');
    assert.equal(headers['user-agent'], 'InboundEmail-Webhook/1.0');
    assert.match(String(headers['webhook-id']), /^dlv_/);

    const verified = new Webhook(SECRET).verify(request!.body, headers as Record<string, string>);
    const body = JSON.parse(request!.body);
    assert.deepEqual(verified, body);
    assert.equal(headers['x-webhook-timestamp'], body.timestamp);
    assert.equal(String(Math.floor(Date.parse(body.timestamp) / 1000)), headers['webhook-timestamp']);
    assert.equal(body.event, 'email.received');
    assert.deepEqual(body.endpoint, { id: endpoint.id, name: endpoint.name, type: 'webhook' });
    assert.equal(body.email.id, emailId);
    assert.equal(body.email.messageId, '<first@sender.test>');
    assert.equal(body.email.recipient, address);
    assert.equal(body.email.subject, 'Hello');
    assert.deepEqual(body.email.from, {
      text: 'ann@sender.test',
      addresses: [{ name: null, address: 'ann@sender.test' }],
    });
    assert.deepEqual(body.email.to.addresses, [{ name: null, address }]);
    assert.equal(typeof body.email.threadId, 'string');
    assert.deepEqual(Object.keys(body), ['event', 'timestamp', 'email', 'endpoint']);
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
    assert.deepEqual(Object.keys(body.email.cleanedContent), [
      'html',
      'text',
      'hasHtml',
      'hasText',
      'attachments',
      'headers',
    ]);
    assert.equal(body.email.parsedData.messageId, '<first@sender.test>');
    assert.equal(body.email.parsedData.subject, 'Hello');
    assert.deepEqual(
      [body.email.parsedData.cc, body.email.parsedData.bcc, body.email.parsedData.replyTo],
      [null, null, null],
    );
    assert.deepEqual(body.email.parsedData.references, []);
    assert.equal(body.email.parsedData.textBody, 'Hi there');
    assert.equal(body.email.parsedData.htmlBody, null);
    assert.equal(body.email.parsedData.headers.subject, 'Hello');
    assert.deepEqual(
      [body.email.cleanedContent.text, body.email.cleanedContent.hasText, body.email.cleanedContent.hasHtml],
      ['Hi there', true, false],
    );
    assert.deepEqual(body.email.parsedData.attachments, [
      {
        filename: 'notes.txt',
        contentType: 'text/plain',
        size: 14,
        contentId: '',
        contentDisposition: 'attachment',
        downloadUrl: `https://mail.example.test/api/e2/attachments/${emailId}/parts/0`,
      },
    ]);
    assert.deepEqual(body.email.cleanedContent.attachments, body.email.parsedData.attachments);
    // The message as stored, Mailroom's Received header first: the attachment's bytes only there, as received.
    const stored = await api.get(`/api/v2/mail/${emailId}/raw`);
    assert.equal(body.email.parsedData.raw, stored.body);
    assert.match(body.email.parsedData.raw, /^Return-Path: <.*>\r\nReceived: from .*\r\n[\s\S]*Subject: Hello\r\n/);
    assert.doesNotMatch(request!.body.replace(JSON.stringify(stored.body), ''), /attached bytes|YXR0YWNoZWQgYnl0ZXM/);

    const delivery = await waitForDelivery(api, emailId);
    assert.equal(delivery.status, 'success');
    assert.equal(delivery.attempts, 1);
    assert.equal(headers['webhook-id'], delivery.id);
    assert.equal(delivery.responseData!.responseCode, 200);
    assert.equal(delivery.responseData!.responseBody, 'ok');
    assert.equal(delivery.responseData!.url, receiver.url);
  });

  test('the OpenAPI documents describe the email.received body and headers every delivery and test sends', async () => {
    const documents = await Promise.all(['e2', 'v2'].map((family) => api.get(`/api/${family}/openapi.json`)));
    const [e2, v2] = documents.map((document) => document.body.webhooks?.emailReceived?.post);
    assert.deepEqual(v2, e2);
    const schema = e2.requestBody.content['application/json'].schema;
    const { endpoint, address } = await webhookAddress({ secret: SECRET });
    await deliver(address, {
      html: '<p>Hi</p>',
      headers: { Cc: 'Bea <bea@sender.test>', 'X-Priority': '1', 'In-Reply-To': '<parent@sender.test>' },
      attachments: [{ filename: 'notes.txt', content: 'attached bytes' }],
    });
    // A message with no Message-ID, Date, From or To, and an unnamed attachment without a disposition.
    const bare = `Subject: Bare\r\nContent-Type: multipart/mixed; boundary=b\r\n\r\n--b\r\n\r\nHi\r\n--b\r\nContent-Type: image/png\r\n\r\nx\r\n--b--\r\n`;
    await deliver(address, { raw: bare });
    assert.equal((await api.post(`/api/v2/endpoints/${endpoint.id}/test`, {})).body.success, true);
    await receiver.waitForRequests(3);
    for (const request of receiver.requests) {
      const body = JSON.parse(request.body);
      assert.deepEqual(SchemaCheck.Errors(schema, body), [true, []], body.email.subject);
      const documented = e2.parameters.map((parameter: { name: string; required: boolean }) => parameter.name);
      assert.deepEqual(
        documented.filter((name: string) => request.headers[name] === undefined),
        [],
        body.email.subject,
      );
    }
    // The deliveries go out on their own, so they may come in any order.
    const emails = receiver.requests.map((request) => JSON.parse(request.body).email);
    assert.deepEqual(
      emails.map((email) => [email.subject, email.parsedData.date === undefined, email.parsedData.priority]).sort(),
      [
        ['Bare', true, undefined],
        ['Hello', false, 'high'],
        ['Test webhook from Mailroom', false, 'normal'],
      ],
    );
  });

  test('a 600,000-character Subject: the body fits a 1 MB cap, its subject cut to 1,000 characters, and says so', async () => {
    const { address } = await webhookAddress();
    const emailId = await deliver(address, { subject: 'Quarterly figures '.repeat(33_334).slice(0, 600_000) });
    await receiver.waitForRequests(1);
    const [request] = receiver.requests;
    assert.ok(Buffer.byteLength(request!.body) < RECEIVER_LIMIT, `${Buffer.byteLength(request!.body)} bytes`);
    const body = JSON.parse(request!.body).email;
    const stored = (await api.get(`/api/v2/mail/${emailId}`)).body.subject as string;
    assert.ok(stored.length > 590_000, `${stored.length} characters stored`);
    assert.deepEqual([body.subject, body.parsedData.subject], [stored.slice(0, 1000), stored.slice(0, 1000)]);
    assert.equal(body.parsedData.textBody.trim(), 'Hi there');
    const delivery = await waitForDelivery(api, emailId);
    assert.equal(delivery.status, 'success');
    assert.deepEqual(delivery.responseData!.strippedFields, [
      'parsedData.headers',
      'cleanedContent.headers',
      'cleanedContent.text',
      'parsedData.raw',
      'subject',
      'parsedData.subject',
    ]);
  });

  test('20,000 To addresses: the body fits a 1 MB cap with the first addresses, its text saying how many went', async () => {
    const { address } = await webhookAddress();
    const readers = Array.from({ length: 20_000 }, (_, i) => `reader${i}@many.test`);
    const raw = ['From: ann@sender.test', `To: ${readers.join(',\r\n ')}`, 'Subject: Hello', '', 'Hi there', ''];
    const emailId = await deliver(address, { raw: raw.join('\r\n') });
    await receiver.waitForRequests(1);
    const [request] = receiver.requests;
    assert.ok(Buffer.byteLength(request!.body) < RECEIVER_LIMIT, `${Buffer.byteLength(request!.body)} bytes`);
    const body = JSON.parse(request!.body).email;
    const { text, addresses } = body.to;
    assert.deepEqual(Object.keys(body.to), ['text', 'addresses']);
    assert.ok(addresses.length > 0 && addresses.length < readers.length, `${addresses.length} addresses`);
    assert.deepEqual(
      addresses,
      readers.slice(0, addresses.length).map((reader) => ({ name: null, address: reader })),
    );
    assert.ok(text.startsWith('reader0@many.test, reader1@many.test, '), text);
    assert.ok(text.endsWith(`… (${readers.length - addresses.length} more addresses left out)`), text);
    assert.deepEqual(body.parsedData.to, body.to);
    assert.equal(body.subject, 'Hello');
    assert.equal(body.parsedData.textBody.trim(), 'Hi there');
    const delivery = await waitForDelivery(api, emailId);
    assert.equal(delivery.status, 'success');
    assert.deepEqual(delivery.responseData!.strippedFields, [
      'parsedData.headers',
      'cleanedContent.headers',
      'cleanedContent.text',
      'parsedData.raw',
      'to',
      'parsedData.to',
    ]);
  });

  test('500, 500, 200: three attempts with one webhook-id, then success; the log shows all three', async () => {
    const { address } = await webhookAddress({ retryAttempts: 3 });
    receiver.answer({ status: 500, body: 'boom' }, { status: 500, body: 'boom again' }, { status: 200, body: 'fine' });
    const emailId = await deliver(address);
    const delivery = await waitForDelivery(api, emailId);
    assert.equal(delivery.status, 'success');
    assert.equal(delivery.attempts, 3);
    assert.deepEqual(
      delivery.attemptLog.map((a) => [a.attempt, a.success, a.statusCode, a.responseBody, a.error, a.url]),
      [
        [1, false, 500, 'boom', 'HTTP 500', receiver.url],
        [2, false, 500, 'boom again', 'HTTP 500', receiver.url],
        [3, true, 200, 'fine', null, receiver.url],
      ],
    );
    assert.equal(receiver.requests.length, 3);
    assert.equal(new Set(receiver.requests.map((r) => r.headers['webhook-id'])).size, 1);
    // The first attempt's raw message came from ingest's memory, the retries' from the blob store: the same bytes.
    const stored = (await api.get(`/api/v2/mail/${emailId}/raw`)).body;
    assert.deepEqual(
      receiver.requests.map((r) => JSON.parse(r.body).email.parsedData.raw === stored),
      [true, true, true],
    );
  });

  test('a retry is claimed with its endpoint as it is then: sent to its new URL, or, deactivated, failed unsent', async () => {
    const moved = await startWebhookReceiver();
    try {
      for (const change of [{ config: { url: moved.url } }, { isActive: false }]) {
        receiver.clear();
        const { endpoint, address } = await webhookAddress({ retryAttempts: 3 });
        let answer!: () => void;
        receiver.answer({ status: 500, after: new Promise<void>((resolve) => (answer = resolve)) }, { status: 200 });
        const emailId = await deliver(address);
        await receiver.waitForRequests(1);
        const changed = await api.put(`/api/v2/endpoints/${endpoint.id}`, change);
        assert.equal(changed.status, 200, JSON.stringify(changed.body));
        answer();
        const delivery = await waitForDelivery(api, emailId);
        const attempts = delivery.attemptLog.map((a) => [a.statusCode, a.url]);
        if ('config' in change) {
          assert.deepEqual(
            [delivery.status, attempts],
            [
              'success',
              [
                [500, receiver.url],
                [200, moved.url],
              ],
            ],
          );
        } else {
          assert.deepEqual(
            [delivery.status, delivery.lastError, attempts],
            ['failed', 'Endpoint is inactive', [[500, receiver.url]]],
          );
        }
        assert.equal(receiver.requests.length, 1);
      }
      assert.equal(moved.requests.length, 1);
    } finally {
      await moved.close();
    }
  });

  test('a 200 whose body holds NUL bytes is recorded once, the NULs as U+FFFD, and not sent again', async () => {
    const { address } = await webhookAddress();
    receiver.answer({ status: 200, body: 'ok\u0000\u0000done' });
    const emailId = await deliver(address);
    const delivery = await waitForDelivery(api, emailId);
    assert.deepEqual(
      [delivery.status, delivery.attempts, delivery.responseData!.responseBody, delivery.attemptLog[0]!.responseBody],
      ['success', 1, 'ok\uFFFD\uFFFDdone', 'ok\uFFFD\uFFFDdone'],
    );
    assert.equal(receiver.requests.length, 1);
  });

  test('a receiver that drops a kept-alive connection as the next request comes gets it on a new one, in one attempt', async () => {
    // Each connection takes one request; a second one on it is dropped unanswered, as a receiver whose idle timeout
    // runs out just then does (uvicorn's 5 s, gunicorn's 2 s, without a Keep-Alive hint).
    const bodies: string[] = [];
    const dropping = createTcpServer((socket) => {
      let buffered = Buffer.alloc(0);
      let served = false;
      socket.on('error', () => {});
      socket.on('data', (chunk: Buffer) => {
        if (served) return void socket.destroy();
        buffered = Buffer.concat([buffered, chunk]);
        const end = buffered.indexOf('\r\n\r\n');
        const length = Number(/content-length: *(\d+)/i.exec(buffered.subarray(0, end).toString())?.[1]);
        if (end < 0 || buffered.length < end + 4 + length) return;
        served = true;
        bodies.push(buffered.subarray(end + 4).toString());
        socket.write('HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok');
      });
    });
    await new Promise<void>((resolve) => dropping.listen(0, '127.0.0.1', resolve));
    try {
      const url = `http://127.0.0.1:${(dropping.address() as AddressInfo).port}/hook`;
      const { address } = await routeToWebhook(world, 'Hook', url, { retryAttempts: 0 });
      const deliveries = [];
      for (const subject of ['First', 'Second']) {
        const delivery = await waitForDelivery(api, await deliver(address, { subject }));
        deliveries.push([delivery.status, delivery.attempts, delivery.lastError]);
      }
      assert.deepEqual(deliveries, [
        ['success', 1, null],
        ['success', 1, null],
      ]);
      assert.deepEqual(
        bodies.map((body) => JSON.parse(body).email.subject),
        ['First', 'Second'],
      );
    } finally {
      dropping.close();
    }
  });

  test('a connection left open by a receiver that never closes idle ones is closed once idle for 4 s', async () => {
    const lingering = createHttpServer((request, response) => request.resume().on('end', () => response.end('ok')));
    lingering.keepAliveTimeout = 0; // Go's net/http default: idle connections are never closed
    await new Promise<void>((resolve) => lingering.listen(0, '127.0.0.1', resolve));
    const open = () => new Promise<number>((resolve) => lingering.getConnections((_error, count) => resolve(count)));
    try {
      const url = `http://127.0.0.1:${(lingering.address() as AddressInfo).port}/hook`;
      const { address } = await routeToWebhook(world, 'Hook', url);
      const delivery = await waitForDelivery(api, await deliver(address));
      assert.equal(delivery.status, 'success');
      const counts = [await open()];
      await new Promise((resolve) => setTimeout(resolve, 4500));
      counts.push(await open());
      assert.deepEqual(counts, [1, 0]);
    } finally {
      lingering.closeAllConnections();
      lingering.close();
    }
  });

  test('retryAttempts 0: one failed attempt and no retry', async () => {
    const { address } = await webhookAddress({ retryAttempts: 0 });
    receiver.answer({ status: 500, body: 'nope' });
    const emailId = await deliver(address);
    const delivery = await waitForDelivery(api, emailId);
    assert.equal(delivery.status, 'failed');
    assert.equal(delivery.attempts, 1);
    assert.equal(delivery.lastError, 'HTTP 500');
    assert.equal(receiver.requests.length, 1);
  });

  test('a receiver that never answers fails the attempt at the endpoint timeout', async () => {
    const { address } = await webhookAddress({ retryAttempts: 0, timeout: 1 });
    receiver.answer('hang');
    const emailId = await deliver(address);
    const delivery = await waitForDelivery(api, emailId);
    assert.equal(delivery.status, 'failed');
    assert.deepEqual(
      delivery.attemptLog.map((a) => [a.statusCode, a.error]),
      [[null, 'Request timeout after 1s']],
    );
    assert.equal(delivery.responseData!.responseCode, null);
  });

  test('a fresh job is stored leased to this process, in the commit of its email: its webhook goes out unclaimed', async () => {
    const { address } = await webhookAddress({ retryAttempts: 0, timeout: 2 });
    receiver.answer('hang');
    const emailId = await deliver(address);
    await receiver.waitForRequests(1);
    const inFlight = await waitForDelivery(api, emailId, (d) => d.status === 'processing');
    const { createdAt, updatedAt } = inFlight as DeliveryView & Record<string, string>;
    // A claim would have set updatedAt to its own time, after the commit that created the job.
    assert.deepEqual({ attempts: inFlight.attempts, updatedAt }, { attempts: 0, updatedAt: createdAt });
    const finished = await waitForDelivery(api, emailId);
    assert.equal(finished.status, 'failed');
    assert.equal(receiver.requests.length, 1);
  });

  test('410 Gone stops retrying and deactivates the endpoint, with the reason on it', async () => {
    const { endpoint, address } = await webhookAddress({ retryAttempts: 5 });
    receiver.answer({ status: 410, body: 'gone' });
    const emailId = await deliver(address);
    const delivery = await waitForDelivery(api, emailId);
    assert.equal(delivery.status, 'failed');
    assert.equal(delivery.attempts, 1);
    const read = await api.get(`/api/v2/endpoints/${endpoint.id}`);
    assert.equal(read.body.isActive, false);
    assert.equal(delivery.lastError, 'HTTP 410: endpoint deactivated');
    assert.match(read.body.deactivatedReason, new RegExp(`^Deactivated at .+: ${receiver.url} answered 410 Gone$`));
    const reactivated = await api.put(`/api/v2/endpoints/${endpoint.id}`, { isActive: true });
    assert.equal(reactivated.body.deactivatedReason, undefined);
    assert.equal(receiver.requests.length, 1);
  });

  test('503 with Retry-After: 1 waits at least that second before the next attempt', async () => {
    const { address } = await webhookAddress({ retryAttempts: 2 });
    receiver.answer({ status: 503, headers: { 'retry-after': '1' } }, { status: 200 });
    const emailId = await deliver(address);
    const delivery = await waitForDelivery(api, emailId);
    assert.equal(delivery.status, 'success');
    const [first, second] = delivery.attemptLog;
    assert.equal(first!.statusCode, 503);
    const gap = Date.parse(second!.startedAt) - (Date.parse(first!.startedAt) + first!.durationMs);
    assert.ok(gap >= 1000, `the second attempt came ${gap} ms after the first ended`);
  });

  test('a receiver that is down, then comes back, gets the delivery', async () => {
    const { address } = await webhookAddress({ retryAttempts: 10 });
    await receiver.stop();
    const emailId = await deliver(address);
    const failing = await waitForDelivery(api, emailId, (d) => d.attempts >= 2);
    assert.equal(failing.status, 'pending');
    assert.match(failing.attemptLog[0]!.error!, /^Connection refused/);
    await receiver.restart();
    const delivery = await waitForDelivery(api, emailId);
    assert.equal(delivery.status, 'success');
    assert.equal(receiver.requests.length, 1);
  });

  test('a legacy webhook gets the same body, signed both ways: Standard Webhooks and X-Webhook-Signature sha256=hex', async () => {
    const created = await api.post('/api/v2/webhooks', { name: 'Legacy', url: receiver.url, secret: 'legacy-secret' });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    await routeAddress(api, 'legacy@hooks.test', domainId, { webhookId: created.body.id });
    const emailId = await deliver('legacy@hooks.test');
    await receiver.waitForRequests(1);
    const [request] = receiver.requests;
    const expected = createHmac('sha256', 'legacy-secret').update(request!.body).digest('hex');
    assert.equal(request!.headers['x-webhook-signature'], `sha256=${expected}`);
    assert.equal(request!.headers['x-endpoint-id'], created.body.id);
    assert.equal(request!.headers['x-webhook-id'], request!.headers['webhook-id']);
    const verified = new Webhook(new TextEncoder().encode('legacy-secret'), { format: 'raw' }).verify(
      request!.body,
      request!.headers as Record<string, string>,
    ) as { email: { id: string }; endpoint: unknown };
    assert.equal(verified.email.id, emailId);
    assert.deepEqual(verified.endpoint, { id: created.body.id, name: 'Legacy', type: 'webhook' });
    assert.equal((await waitForDelivery(api, emailId)).status, 'success');
  });

  test('header fields named constructor and __proto__ are received and delivered as any other field', async () => {
    const { address } = await webhookAddress();
    const raw = `From: ann@sender.test\r\nTo: ${address}\r\nSubject: Hi\r\nConstructor: x\r\n__proto__: y\r\n\r\nHi\r\n`;
    const emailId = await deliver(address, { raw });
    await receiver.waitForRequests(1);
    const { email } = JSON.parse(receiver.requests[0]!.body);
    assert.equal(email.id, emailId);
    assert.deepEqual(
      Object.entries(email.parsedData.headers).filter(([name]) => !['from', 'to'].includes(name)),
      [
        ['subject', 'Hi'],
        ['constructor', 'x'],
        ['__proto__', 'y'],
      ],
    );
  });

  test('a raw latin-1 Subject and From name arrive as latin-1; UTF-8 and RFC 2047 ones as before', async () => {
    for (const [label, subject, encoding, expected] of [
      ['latin-1', 'Café crème', 'latin1', 'Café crème'],
      ['UTF-8', 'Café crème ☕', 'utf8', 'Café crème ☕'],
      ['RFC 2047', '=?iso-8859-1?Q?Caf=E9_cr=E8me?=', 'latin1', 'Café crème'],
    ] as const) {
      const { address } = await webhookAddress();
      const raw = `From: "${subject}" <ann@sender.test>\r\nTo: ${address}\r\nSubject: ${subject}\r\n\r\nHi\r\n`;
      await deliver(address, { raw: Buffer.from(raw, encoding) });
      await receiver.waitForRequests(1);
      const { email } = JSON.parse(receiver.requests[0]!.body);
      assert.deepEqual(
        [email.subject, email.parsedData.subject, email.parsedData.headers.subject],
        [expected, expected, expected],
        label,
      );
      assert.deepEqual(
        email.from,
        { text: `"${expected}" <ann@sender.test>`, addresses: [{ name: expected, address: 'ann@sender.test' }] },
        label,
      );
      assert.deepEqual(email.parsedData.from, email.from, label);
      receiver.clear();
    }
  });
});
