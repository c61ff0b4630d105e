import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, test } from 'node:test';
import { setTimeout as delay, setImmediate as nextTurn } from 'node:timers/promises';
import pg from 'pg';
import { announceCommits } from '../../src/db/index.ts';
import { startTestApp, TEST_DATABASE_URL, type TestApp } from '../helpers/app.ts';
import { type DnsServer, startDnsServer } from '../helpers/dns-server.ts';
import { createVerifiedDomain } from '../helpers/domains.ts';
import { eventually } from '../helpers/eventually.ts';
import { apiClient } from '../helpers/http.ts';
import { sendMail } from '../helpers/smtp.ts';
import { createAddress } from '../smtp/mail-setup.ts';

const skip = TEST_DATABASE_URL ? false : 'needs TEST_DATABASE_URL (PostgreSQL)';
const ADDRESS = 'inbox@announced.test';

let dns: DnsServer;
let server: TestApp;

before(async () => {
  if (skip) return;
  dns = await startDnsServer();
  server = await startTestApp({ DNS_SERVERS: dns.address });
  const api = apiClient(server.baseUrl, server.apiKey);
  await createAddress(api, ADDRESS, (await createVerifiedDomain(api, dns, 'announced.test')).id);
});
after(async () => {
  await server?.close();
  await dns?.close();
});

/** A connection LISTENing on `channel`: what it heard, each payload with the time it arrived. */
async function listen(channel: string) {
  const client = new pg.Client({ connectionString: TEST_DATABASE_URL });
  await client.connect();
  const heard: { payload: string; at: number }[] = [];
  client.on('notification', ({ payload }) => heard.push({ payload: payload ?? '', at: performance.now() }));
  await client.query(`LISTEN "${channel}"`);
  return { heard, close: () => client.end() };
}

test("mail stored is announced on the installation's events channel by the process that stored it", {
  skip,
}, async () => {
  const { database } = server.app.config;
  assert.equal(database.kind, 'postgres');
  const listener = await listen(`mailroom_events_${database.schema}`);
  try {
    for (const subject of ['First', 'Second']) {
      const before = listener.heard.length;
      const sent = await sendMail({ port: server.smtpPort, to: ADDRESS, subject, text: 'Hello' });
      assert.equal(sent.code, 250, sent.response);
      await eventually(async () => listener.heard.length > before, `the announcement of ${subject}`);
    }
    // Every announcement names the process (a trigger's at each commit would be empty), and it is one process.
    const senders = new Set(listener.heard.map(({ payload }) => payload));
    assert.equal(senders.size, 1, JSON.stringify([...senders]));
    assert.match([...senders][0]!, /^[0-9a-f]{16}$/);
  } finally {
    await listener.close();
  }
});

test('commits announced one after another share NOTIFYs 50 ms apart, and the last commit is announced after it', {
  skip,
}, async () => {
  const channel = `test_announce_${randomBytes(4).toString('hex')}`;
  const listener = await listen(channel);
  const announcer = announceCommits({
    db: server.app.database.db,
    channel,
    self: 'tester',
    purpose: 'test',
    logger: server.app.logger,
  });
  try {
    const started = performance.now();
    let announced = 0;
    let lastAnnouncedAt = 0;
    while (performance.now() - started < 300) {
      announcer.announce();
      announced++;
      lastAnnouncedAt = performance.now();
      await nextTurn();
    }
    await eventually(
      async () => (listener.heard.at(-1)?.at ?? 0) > lastAnnouncedAt,
      'an announcement after the last commit',
    );
    await delay(200);
    const elapsed = listener.heard.at(-1)!.at - started;
    assert.ok(announced > 100, `${announced} commits announced`);
    assert.ok(
      listener.heard.length <= Math.ceil(elapsed / 50) + 1,
      `${listener.heard.length} NOTIFYs in ${Math.round(elapsed)} ms`,
    );
    assert.deepEqual(new Set(listener.heard.map(({ payload }) => payload)), new Set(['tester']));
  } finally {
    announcer.close();
    await listener.close();
  }
});
