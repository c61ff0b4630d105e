import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { sql } from 'kysely';
import { startTestApp, TEST_DATABASE_URL, type TestApp } from '../helpers/app.ts';
import { openEventStream } from './sse-client.ts';

const skip = TEST_DATABASE_URL ? false : 'needs TEST_DATABASE_URL (PostgreSQL)';
let server: TestApp;

before(async () => {
  if (!skip) server = await startTestApp({ DNS_SERVERS: '127.0.0.1:9' });
});
after(async () => {
  await server?.close();
});

test('events replay in transaction order across a power of ten, each once', { skip }, async () => {
  const { db } = server.app.database;
  const accountId = (await server.app.accounts.authenticate(server.apiKey))!.id;
  // Transaction ids of 99, 100 and 101: as text, "100" and "101" sort before "99".
  for (const txid of ['99', '100', '101']) {
    await sql`insert into events (account_id, type, data, created_at, txid)
      values (${accountId}, 'domain.status_changed', ${JSON.stringify({ txid })}, '2026-11-28T00:00:00.000Z', ${txid}::xid8)`.execute(
      db,
    );
  }
  const stream = await openEventStream(server.baseUrl, server.apiKey, '0-0');
  try {
    const events = await stream.waitFor(3);
    assert.deepEqual(
      events.map((event) => event.data.txid),
      ['99', '100', '101'],
    );
    assert.deepEqual(
      events.map((event) => event.id.split('-')[0]),
      ['99', '100', '101'],
    );
  } finally {
    await stream.close();
  }
});
