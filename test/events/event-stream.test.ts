import assert from 'node:assert/strict';
import { once } from 'node:events';
import { connect } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { setTimeout as delay } from 'node:timers/promises';
import { createWebhookEndpoint, routeAddress } from '../delivery/setup.ts';
import { startTestApp, TEST_DATABASE_URL, type TestApp } from '../helpers/app.ts';
import { type DnsServer, startDnsServer } from '../helpers/dns-server.ts';
import { createVerifiedDomain } from '../helpers/domains.ts';
import { type ApiClient, apiClient } from '../helpers/http.ts';
import { sendMail } from '../helpers/smtp.ts';
import { startWebhookReceiver, type WebhookReceiver } from '../helpers/webhook-receiver.ts';
import { type EventStream, openEventStream, type StreamEvent } from './sse-client.ts';

let dns: DnsServer;
let receiver: WebhookReceiver;
let server: TestApp;
let api: ApiClient;
/** Opened before anything happens in the file; it sees every event of the default account. */
let everything: EventStream;
let address: string;
let endpointId: string;
let domainId: string;

before(async () => {
  dns = await startDnsServer();
  receiver = await startWebhookReceiver();
  server = await startTestApp({ DNS_SERVERS: dns.address, DELIVERY_RETRY_SCALE: '0.001' });
  api = apiClient(server.baseUrl, server.apiKey);
  everything = await openEventStream(server.baseUrl, server.apiKey);
  domainId = (await createVerifiedDomain(api, dns, 'events.test')).id;
  endpointId = (await createWebhookEndpoint(api, 'Events hook', { url: receiver.url })).id;
  address = 'inbox@events.test';
  await routeAddress(api, address, domainId, { endpointId });
});
after(async () => {
  await everything?.close();
  await server.close();
  await receiver.close();
  await dns.close();
});

async function deliver(subject: string, port = server.smtpPort): Promise<string> {
  const sent = await sendMail({ port, from: 'ann@sender.test', to: address, subject, text: 'Hello' });
  assert.equal(sent.code, 250, sent.response);
  return sent.queuedIds[0]!;
}

/** The event without its commit time, which is checked to be an ISO timestamp. */
function withoutTime(event: StreamEvent) {
  const { createdAt, ...data } = event.data;
  assert.match(String(createdAt), /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
  return { event: event.event, data };
}

/** Waits until `stream` has an event that `match` accepts and returns all events up to and including it. */
async function eventsUntil(stream: EventStream, match: (event: StreamEvent) => boolean) {
  for (let count = 1; count <= 50; count++) {
    const events = await stream.waitFor(count);
    if (match(events.at(-1)!)) return events;
  }
  throw new Error(`no matching event in ${JSON.stringify(stream.events)}`);
}

describe('GET /api/v2/events', () => {
  test('401 { error } without the API key', async () => {
    const response = await fetch(`${server.baseUrl}/api/v2/events`);
    assert.equal(response.status, 401);
    assert.deepEqual(await response.json(), {
      error: 'Unauthorized',
      detail: 'Missing Authorization header: send Authorization: Bearer <key>',
    });
  });

  test('the OpenAPI document describes it as a text/event-stream with a Last-Event-ID header', async () => {
    const document = await api.get('/api/v2/openapi.json');
    const operation = document.body.paths['/api/v2/events'].get;
    assert.deepEqual(Object.keys(operation.responses['200'].content), ['text/event-stream']);
    assert.deepEqual(
      operation.parameters.map((parameter: { in: string; name: string }) => [parameter.in, parameter.name]),
      [['header', 'last-event-id']],
    );
  });

  test('HEAD answers the headers at once, and opens no stream', async () => {
    const response = await fetch(`${server.baseUrl}/api/v2/events`, {
      method: 'HEAD',
      headers: { authorization: `Bearer ${server.apiKey}` },
      signal: AbortSignal.timeout(5000),
    });
    assert.equal(response.status, 200);
    assert.equal(response.headers.get('content-type'), 'text/event-stream; charset=utf-8');
    assert.equal(await response.text(), '');
  });

  test('400 for a Last-Event-ID that is not a position the server wrote', async () => {
    const stream = await openEventStream(server.baseUrl, server.apiKey, 'not-an-id');
    assert.equal(stream.response.status, 400);
    assert.deepEqual(await stream.response.json(), { error: 'Invalid Last-Event-ID' });
  });

  test('400 for a Last-Event-ID whose numbers are past the largest 64-bit integer', async () => {
    // In the format accepted, but past what either database can hold (PostgreSQL would fail every read of them).
    const positions = TEST_DATABASE_URL
      ? ['1-9999999999999999999', '1-9223372036854775808', '9223372036854775808-1']
      : ['9999999999999999999', '9223372036854775808'];
    for (const position of positions) {
      const stream = await openEventStream(server.baseUrl, server.apiKey, position);
      assert.equal(stream.response.status, 400, position);
      assert.deepEqual(await stream.response.json(), { error: 'Invalid Last-Event-ID' });
    }
  });

  test('a stream whose reads fail does not hold back another account’s stream', async () => {
    const brokenKey = await server.newAccountKey('events-broken');
    const brokenAccountId = (await server.app.accounts.authenticate(brokenKey))!.id;
    const otherKey = await server.newAccountKey('events-served');
    const otherApi = apiClient(server.baseUrl, otherKey);
    const otherDomain = await createVerifiedDomain(otherApi, dns, 'served-events.test');
    const otherEndpoint = await createWebhookEndpoint(otherApi, 'Served hook', { url: receiver.url });
    await routeAddress(otherApi, 'inbox@served-events.test', otherDomain.id, { endpointId: otherEndpoint.id });
    // Opened first, so the hub reads its account before the other's; a row it cannot parse fails each of its reads.
    const broken = await openEventStream(server.baseUrl, brokenKey);
    const { db } = server.app.database;
    const badRow = await db
      .insertInto('events')
      .values({ account_id: brokenAccountId, type: 'email.received', data: 'not JSON', created_at: '' })
      .returning('id')
      .executeTakeFirstOrThrow();
    const other = await openEventStream(server.baseUrl, otherKey);
    try {
      const sent = await sendMail({
        port: server.smtpPort,
        from: 'ann@sender.test',
        to: 'inbox@served-events.test',
        subject: 'Served despite the broken stream',
        text: 'Hello',
      });
      assert.equal(sent.code, 250, sent.response);
      const events = await eventsUntil(other, (event) => event.event === 'email.received');
      assert.equal(events.at(-1)!.data.emailId, sent.queuedIds[0]);
      assert.equal(broken.events.length, 0);
    } finally {
      await db.deleteFrom('events').where('id', '=', badRow.id).execute();
      await broken.close();
      await other.close();
    }
  });

  test('a text/event-stream with a retry hint, then the domain verification, the mail and its delivery in order', async () => {
    assert.equal(everything.response.status, 200);
    assert.equal(everything.response.headers.get('content-type'), 'text/event-stream; charset=utf-8');
    assert.equal(everything.retry, 1000);
    const emailId = await deliver('Ordered');
    const events = await eventsUntil(everything, (event) => event.event === 'delivery.succeeded');
    const deliveries = await api.get(`/api/v2/deliveries?emailId=${emailId}`);
    const email = await api.get(`/api/v2/mail/${emailId}`);
    assert.deepEqual(events.map(withoutTime), [
      {
        event: 'domain.status_changed',
        data: { domainId, domain: 'events.test', from: 'pending', to: 'verified' },
      },
      {
        event: 'email.received',
        data: {
          emailId,
          messageId: email.body.messageId,
          from: 'ann@sender.test',
          subject: 'Ordered',
          recipient: address,
          receivedAt: email.body.receivedAt,
        },
      },
      {
        event: 'delivery.succeeded',
        data: {
          deliveryId: deliveries.body.data[0].id,
          emailId,
          endpointId,
          attempt: 1,
          statusCode: 200,
          error: null,
        },
      },
    ]);
    assert.equal(new Set(events.map((event) => event.id)).size, events.length, 'every event has its own id');
  });

  test('a failed attempt is delivery.failed with its retry time, then the retry succeeds', async () => {
    receiver.answer({ status: 503, body: 'busy' }, { status: 200 });
    const seen = everything.events.length;
    const emailId = await deliver('Retried');
    const events = await eventsUntil(
      everything,
      (event) => event.event === 'delivery.succeeded' && event.data.emailId === emailId,
    );
    const mine = events.slice(seen).map(withoutTime);
    assert.deepEqual(
      mine.map((event) => event.event),
      ['email.received', 'delivery.failed', 'delivery.succeeded'],
    );
    const failed = mine[1]!.data;
    assert.match(String(failed.nextAttemptAt), /^\d{4}-\d\d-\d\dT/);
    assert.deepEqual(
      { ...failed, nextAttemptAt: 'checked' },
      {
        deliveryId: failed.deliveryId,
        emailId,
        endpointId,
        attempt: 1,
        statusCode: 503,
        error: 'HTTP 503',
        final: false,
        nextAttemptAt: 'checked',
      },
    );
    assert.deepEqual(mine[2]!.data, {
      deliveryId: failed.deliveryId,
      emailId,
      endpointId,
      attempt: 2,
      statusCode: 200,
      error: null,
    });
    receiver.answer();
  });

  test('an account holds at most 20 streams at once: the next is 429 until one closes, and others are not held', async () => {
    const key = await server.newAccountKey('streams');
    const streams = [];
    for (let n = 0; n < 20; n++) {
      const stream = await openEventStream(server.baseUrl, key);
      assert.equal(stream.response.status, 200);
      streams.push(stream);
    }
    const refused = await fetch(`${server.baseUrl}/api/v2/events`, { headers: { authorization: `Bearer ${key}` } });
    assert.deepEqual(
      [refused.status, await refused.json()],
      [429, { error: 'Too many event streams: an account holds at most 20 open at once; close one first' }],
    );
    const others = await openEventStream(server.baseUrl, server.apiKey);
    assert.equal(others.response.status, 200);
    await others.close();
    await streams.pop()!.close();
    // The server learns of the close when the socket goes.
    let reopened: EventStream | undefined;
    for (let tries = 0; tries < 50 && reopened?.response.status !== 200; tries++) {
      await reopened?.close();
      if (tries > 0) await delay(100);
      reopened = await openEventStream(server.baseUrl, key);
    }
    assert.equal(reopened!.response.status, 200);
    for (const stream of [...streams, reopened!]) await stream.close();
  });

  test('per account: another account’s stream gets its own events and none of this one’s', async () => {
    const otherKey = await server.newAccountKey('events-other');
    const other = await openEventStream(server.baseUrl, otherKey);
    try {
      await deliver('Not for the other account');
      const otherDomain = await createVerifiedDomain(apiClient(server.baseUrl, otherKey), dns, 'other-events.test');
      // The other account's own event comes after this account's mail; the stream holds that one event only.
      const events = await other.waitFor(1);
      assert.deepEqual(events.map(withoutTime), [
        {
          event: 'domain.status_changed',
          data: { domainId: otherDomain.id, domain: 'other-events.test', from: 'pending', to: 'verified' },
        },
      ]);
      assert.equal(other.events.length, 1);
    } finally {
      await other.close();
    }
  });

  test('a stream whose key is revoked ends before sending anything committed after the revocation', async () => {
    const created = await api.post('/api/v2/keys');
    assert.equal(created.status, 201);
    const revoked = await openEventStream(server.baseUrl, created.body.key);
    const kept = await openEventStream(server.baseUrl, server.apiKey);
    try {
      const before = await deliver('Before the revocation');
      await eventsUntil(revoked, (event) => event.event === 'email.received' && event.data.emailId === before);
      assert.equal((await api.delete(`/api/v2/keys/${created.body.id}`)).status, 200);
      const after = await deliver('After the revocation');
      // Its delivery too: the next test counts the events that come after this one's.
      await eventsUntil(kept, (event) => event.event === 'delivery.succeeded' && event.data.emailId === after);
      const ended = await Promise.race([revoked.ended().then(() => true), delay(5000, false)]);
      assert.equal(ended, true, 'the revoked key’s stream is still open');
      assert.equal(
        revoked.events.some((event) => event.data.emailId === after),
        false,
      );
    } finally {
      await revoked.close();
      await kept.close();
    }
  });

  test('resume with Last-Event-ID after a disconnect: the events missed, no gap and no duplicate', async () => {
    const first = await openEventStream(server.baseUrl, server.apiKey);
    const before = await deliver('Before the disconnect');
    const seen = await eventsUntil(
      first,
      (event) => event.event === 'delivery.succeeded' && event.data.emailId === before,
    );
    await first.close();
    const missed = [await deliver('Missed one'), await deliver('Missed two')];
    const resumed = await openEventStream(server.baseUrl, server.apiKey, seen.at(-1)!.id);
    try {
      const last = await eventsUntil(
        resumed,
        (event) => event.event === 'delivery.succeeded' && event.data.emailId === missed[1],
      );
      const allOf = await eventsUntil(
        everything,
        (event) => event.event === 'delivery.succeeded' && event.data.emailId === missed[1],
      );
      // From the first event the first connection saw, the stream that never disconnected saw exactly what the two
      // connections saw together (each stream is written on its own, so it may still be behind when a test starts).
      const start = allOf.findIndex((event) => event.id === seen[0]!.id);
      assert.deepEqual(
        [...seen, ...last].map((event) => event.id),
        allOf.slice(start).map((event) => event.id),
      );
      assert.deepEqual(
        last.filter((event) => event.event === 'email.received').map((event) => event.data.emailId),
        missed,
      );
    } finally {
      await resumed.close();
    }
  });

  test('a second instance on the same PostgreSQL schema streams the first one’s events, resumable on either', {
    skip: TEST_DATABASE_URL ? false : 'needs TEST_DATABASE_URL (PostgreSQL)',
  }, async () => {
    const database = server.app.config.database;
    assert.equal(database.kind, 'postgres');
    const second = await startTestApp({ DNS_SERVERS: dns.address, DATABASE_SCHEMA: database.schema! });
    try {
      const there = await openEventStream(second.baseUrl, second.apiKey);
      const emailId = await deliver('Seen by the other instance');
      const events = await eventsUntil(
        there,
        (event) => event.event === 'delivery.succeeded' && event.data.emailId === emailId,
      );
      assert.deepEqual(
        events.map((event) => [event.event, event.data.emailId]),
        [
          ['email.received', emailId],
          ['delivery.succeeded', emailId],
        ],
      );
      const here = await eventsUntil(
        everything,
        (event) => event.event === 'delivery.succeeded' && event.data.emailId === emailId,
      );
      assert.deepEqual(
        events.map((event) => event.id),
        here.slice(-2).map((event) => event.id),
      );
      // A position one instance sent resumes on the other.
      const resumed = await openEventStream(second.baseUrl, second.apiKey, events[0]!.id);
      const after = await deliver('After the switch');
      const rest = await eventsUntil(
        resumed,
        (event) => event.event === 'email.received' && event.data.emailId === after,
      );
      assert.deepEqual(
        rest.map((event) => event.id),
        [events[1]!.id, rest.at(-1)!.id],
      );
      await resumed.close();
      await there.close();
    } finally {
      await second.close();
    }
  });
});

describe('GET /api/v2/events: the connection', () => {
  test('a stream outlives HTTP_REQUEST_TIMEOUT_SECONDS, and closing the app ends it', async () => {
    const app = await startTestApp({ DNS_SERVERS: dns.address, HTTP_REQUEST_TIMEOUT_SECONDS: '0.5' });
    let closed = false;
    try {
      const stream = await openEventStream(app.baseUrl, app.apiKey);
      // Well past the request timeout, which bounds only the request's arrival.
      await new Promise((resolve) => setTimeout(resolve, 1500));
      const domain = await createVerifiedDomain(apiClient(app.baseUrl, app.apiKey), dns, 'late-events.test');
      const [event] = await stream.waitFor(1);
      assert.deepEqual(withoutTime(event!), {
        event: 'domain.status_changed',
        data: { domainId: domain.id, domain: 'late-events.test', from: 'pending', to: 'verified' },
      });
      closed = true;
      await app.close();
      await stream.ended();
      assert.equal(stream.events.length, 1);
    } finally {
      if (!closed) await app.close();
    }
  });

  test('a client that stops reading is disconnected once it is more than 1 MiB behind', async () => {
    const app = await startTestApp({ DNS_SERVERS: dns.address });
    try {
      const appApi = apiClient(app.baseUrl, app.apiKey);
      const domain = await createVerifiedDomain(appApi, dns, 'slow-reader.test');
      const inbox = 'inbox@slow-reader.test';
      assert.equal((await appApi.post('/api/v2/email-addresses', { address: inbox, domainId: domain.id })).status, 201);
      const { hostname, port } = new URL(app.baseUrl);
      const socket = connect(Number(port), hostname);
      socket.setEncoding('utf8');
      let received = '';
      socket.on('data', (chunk: string) => {
        received += chunk;
      });
      const closed = new Promise<NodeJS.ErrnoException | undefined>((resolve) => {
        let error: NodeJS.ErrnoException | undefined;
        socket.on('error', (cause) => {
          error = cause;
        });
        socket.on('close', () => resolve(error));
      });
      socket.write(`GET /api/v2/events HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${app.apiKey}\r\n\r\n`);
      // Once the retry hint is in, the stream is open; from then on this client reads nothing.
      while (!received.includes('retry: 1000')) await once(socket, 'data');
      socket.pause();
      // A client that does read: once it has every event, they were all handed to the stalled one too.
      const reader = await openEventStream(app.baseUrl, app.apiKey);
      // 40 events of 200 KB: more than the loopback socket buffers hold (about 4 MB), and then over 1 MiB more.
      const subject = 'S'.repeat(200_000).replace(/.{900}/g, '$&\n ');
      for (let index = 0; index < 40; index++) {
        const raw = `From: ann@sender.test\nTo: ${inbox}\nSubject: ${index} ${subject}\n\nHello\n`;
        const sent = await sendMail({ port: app.smtpPort, from: 'ann@sender.test', to: inbox, raw });
        assert.equal(sent.code, 250, sent.response);
      }
      await reader.waitFor(40, 60_000);
      await reader.close();
      socket.resume();
      // Reset, not ended: an end() would have waited for this client to read all that was written to it first.
      assert.equal((await closed)?.code, 'ECONNRESET');
    } finally {
      await app.close();
    }
  });
});
