import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { sql } from 'kysely';
import { type DatabaseHandle, migrateToLatest, openDatabase } from '../../src/db/index.ts';
import { attachSearchDatabase, indexQueuedEmails } from '../../src/search/index.ts';

/**
 * The search queue's trim runs unsynced (src/search/sqlite-search-index.ts), on a connection that also serves the
 * API's writes when a search catches the index up: it must leave that connection at the installation's durability
 * level.
 */

let dir: string;
let handle: DatabaseHandle;

before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'mailroom-search-queue-'));
  // EXTRA, not the default FULL: the level put back must be the one the connection had, whatever it was.
  handle = await openDatabase(
    { kind: 'sqlite', file: join(dir, 'db.sqlite'), synchronous: 'EXTRA' },
    { attach: attachSearchDatabase },
  );
  await migrateToLatest(handle);
});
after(async () => {
  await handle?.close();
  await rm(dir, { recursive: true, force: true });
});

test('SQLite: applying the search queue trims what it applied and keeps the durability level of its connection', async () => {
  const synchronous = async () =>
    (await sql<{ synchronous: number }>`PRAGMA main.synchronous`.execute(handle.db)).rows[0]!.synchronous;
  const queued = async () =>
    Number((await sql<{ n: number }>`SELECT count(*) AS n FROM emails_search_queue`.execute(handle.db)).rows[0]!.n);
  const EXTRA = 3;
  assert.equal(await synchronous(), EXTRA);

  // Rowids of no email: applying them indexes nothing, but they are applied and trimmed like any others.
  await sql`INSERT INTO emails_search_queue (email_rowid) VALUES (1001), (1002)`.execute(handle.db);
  assert.equal(await queued(), 2);
  assert.equal(await indexQueuedEmails(handle.db), true);
  assert.equal(await queued(), 0);
  assert.equal(await synchronous(), EXTRA);
  assert.equal(await indexQueuedEmails(handle.db), false);
});
