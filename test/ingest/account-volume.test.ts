import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { type EventStream, openEventStream, type StreamEvent } from '../events/sse-client.ts';
import { startTestApp, type TestApp } from '../helpers/app.ts';
import { manualClock } from '../helpers/clock.ts';
import { type DnsServer, startDnsServer } from '../helpers/dns-server.ts';
import { createVerifiedDomain } from '../helpers/domains.ts';
import { type ApiClient, apiClient } from '../helpers/http.ts';
import { sendMail } from '../helpers/smtp.ts';
import { createAddress } from '../smtp/mail-setup.ts';

const HOUR_MS = 3_600_000;
const clock = manualClock();
const start = clock.now();
let dns: DnsServer;
let server: TestApp;
let api: ApiClient;
let otherApi: ApiClient;
let stream: EventStream;
let otherStream: EventStream;

before(async () => {
  dns = await startDnsServer();
  server = await startTestApp({ DNS_SERVERS: dns.address, ACCOUNT_MAIL_LIMIT_PER_HOUR: '2' }, { clock });
  api = apiClient(server.baseUrl, server.apiKey);
  const domain = await createVerifiedDomain(api, dns, 'volume.test');
  await createAddress(api, 'a@volume.test', domain.id);
  await createAddress(api, 'b@volume.test', domain.id);
  const otherKey = await server.newAccountKey('other');
  otherApi = apiClient(server.baseUrl, otherKey);
  const otherDomain = await createVerifiedDomain(otherApi, dns, 'other-volume.test');
  await createAddress(otherApi, 'c@other-volume.test', otherDomain.id);
  stream = await openEventStream(server.baseUrl, server.apiKey);
  otherStream = await openEventStream(server.baseUrl, otherKey);
});
after(async () => {
  await stream?.close();
  await otherStream?.close();
  await server.close();
  await dns.close();
});

async function send(to: string | string[], subject: string) {
  const sent = await sendMail({ port: server.smtpPort, from: 'ann@sender.test', to, subject, text: 'Hello' });
  assert.equal(sent.code, 250, sent.response);
}

/** Waits for `count` events of `type` on the stream, then returns every event of that type. */
async function eventsOfType(on: EventStream, type: string, count: number): Promise<StreamEvent[]> {
  for (let seen = on.events.length + 1; ; seen++) {
    const matching = on.events.filter((event) => event.event === type);
    if (matching.length >= count) return matching;
    await on.waitFor(seen);
  }
}

/** The event's data as streamed; `createdAt` is when the limit was crossed, by the app's clock. */
function limitEvent(windowStartMs: number, received: number, crossedAtMs: number) {
  return {
    limitPerHour: 2,
    received,
    windowStartedAt: new Date(windowStartMs).toISOString(),
    windowEndsAt: new Date(windowStartMs + HOUR_MS).toISOString(),
    createdAt: new Date(crossedAtMs).toISOString(),
  };
}

describe('ACCOUNT_MAIL_LIMIT_PER_HOUR: mail over an account hourly volume is stored and flagged', () => {
  test('the email that goes over the limit raises account.mail_limit_exceeded once per window, stamped by the app clock; all mail is stored', async () => {
    // Two recipients of one message are two emails for the account.
    await send(['a@volume.test', 'b@volume.test'], 'first');
    await send('a@volume.test', 'second');
    await send('a@volume.test', 'third');
    await send('c@other-volume.test', 'for the other account');

    clock.advanceSeconds(3600);
    await send('a@volume.test', 'next hour 1');
    await send('a@volume.test', 'next hour 2');
    await send('b@volume.test', 'next hour 3');

    const flags = await eventsOfType(stream, 'account.mail_limit_exceeded', 2);
    await eventsOfType(stream, 'email.received', 7);
    // The clock stands still within each window, so each limit is crossed at its window's start.
    assert.deepEqual(
      flags.map(({ data }) => data),
      [
        limitEvent(start.getTime(), 3, start.getTime()),
        limitEvent(start.getTime() + HOUR_MS, 3, start.getTime() + HOUR_MS),
      ],
    );
    const list = await api.get('/api/v2/mail');
    assert.equal(list.body.emails.length, 7);
  });

  test('another account counts its own mail: its one email raises nothing', async () => {
    await eventsOfType(otherStream, 'email.received', 1);
    // On PostgreSQL a stream opened without Last-Event-ID starts at the oldest transaction still running anywhere on
    // the server (src/events), so another test file's may let it replay the domain's verification from set-up.
    assert.deepEqual(
      otherStream.events.map((event) => event.event).filter((type) => type !== 'domain.status_changed'),
      ['email.received'],
    );
  });
});
