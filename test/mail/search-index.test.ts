import assert from 'node:assert/strict';
import { readdir, readFile } from 'node:fs/promises';
import { after, before, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { sql } from 'kysely';
import { openDatabase } from '../../src/db/index.ts';
import { INGEST_THREAD_NAMES } from '../../src/ingest/index.ts';
import { attachSearchDatabase, SEARCH_INDEXER_THREAD_NAME } from '../../src/search/index.ts';
import { TEST_DATABASE_URL } from '../helpers/app.ts';
import { type MailWorld, startMailWorld } from './setup.ts';

/**
 * On SQLite the search index is a database of its own, which a thread brings up to date from a queue
 * (src/search/sqlite-search-index.ts). None of that may show: a search finds an email as soon as its 250 was sent,
 * and an email changed or deleted, indexed or still queued, is found by what it holds now and by nothing else.
 */

let world: MailWorld;

const sqliteOnly = { skip: TEST_DATABASE_URL ? 'the search database is SQLite-only' : false };

before(async () => {
  world = await startMailWorld(['inbox@batches.test']);
});
after(async () => {
  await world?.close();
});

async function searchIds(search: string): Promise<string[]> {
  const response = await world.api.get(`/api/v2/mail?limit=100&search=${encodeURIComponent(search)}`);
  assert.equal(response.status, 200, JSON.stringify(response.body));
  assert.equal(response.body.pagination.total, response.body.emails.length);
  return response.body.emails.map((email: { id: string }) => email.id).sort();
}

async function deliver(subject: string, text = 'nothing to see'): Promise<string> {
  const [id] = await world.deliver({ from: 'sender@elsewhere.test', to: 'inbox@batches.test', subject, text });
  return id!;
}

test('each message is found right after its 250, for 80 messages in a row', async () => {
  const stored: string[] = [];
  for (let n = 1; n <= 80; n++) {
    stored.push(await deliver(`arrival number${n}`));
    assert.deepEqual(await searchIds(`number${n}`), [stored.at(-1)], `message ${n}`);
  }
  assert.deepEqual(await searchIds('arrival'), stored.sort());
});

test(
  'SQLite: an email changed or deleted while indexed or while queued is found by its new text only',
  sqliteOnly,
  async () => {
    const db = world.server.app.database.db;
    const changed = await deliver('kestrel before');
    const deletedIndexed = await deliver('kestrel doomed');
    const deletedQueued = await deliver('heron doomed');
    const untouched = await deliver('heron still');
    // The search indexes what is queued, so all four are in the index now.
    assert.deepEqual(await searchIds('kestrel'), [changed, deletedIndexed].sort());

    // In one transaction, so that the indexer applies none of it between the statements.
    const queuedInside = await db.transaction().execute(async (trx) => {
      const rowids = await sql<{ rowid: number }>`
      SELECT rowid FROM emails WHERE id IN (${changed}, ${deletedIndexed}, ${deletedQueued}) ORDER BY rowid`.execute(
        trx,
      );
      // Indexed, then changed twice; indexed, then deleted; changed, so queued, then deleted.
      await trx.updateTable('emails').set({ subject: 'kestrel changed' }).where('id', '=', changed).execute();
      await trx.updateTable('emails').set({ subject: 'kestrel after' }).where('id', '=', changed).execute();
      await trx.deleteFrom('emails').where('id', '=', deletedIndexed).execute();
      await trx.updateTable('emails').set({ subject: 'heron requeued' }).where('id', '=', deletedQueued).execute();
      await trx.deleteFrom('emails').where('id', '=', deletedQueued).execute();
      const queued = await sql<{ email_rowid: number }>`
      SELECT DISTINCT q.email_rowid FROM emails_search_queue AS q, search.search_progress AS p
      WHERE q.seq > p.applied_seq ORDER BY q.email_rowid`.execute(trx);
      return { queued: queued.rows.map((row) => row.email_rowid), touched: rowids.rows.map((row) => row.rowid) };
    });
    assert.deepEqual(queuedInside.queued, queuedInside.touched, 'every email changed or deleted is queued');

    assert.deepEqual(await searchIds('after'), [changed]);
    assert.deepEqual(await searchIds('kestrel'), [changed]);
    assert.deepEqual(await searchIds('heron'), [untouched]);
    for (const gone of ['before', 'changed', 'doomed', 'requeued']) assert.deepEqual(await searchIds(gone), [], gone);
    const left = await sql<{ n: number }>`
    SELECT count(*) AS n FROM emails_search_queue WHERE seq > (SELECT applied_seq FROM search.search_progress)`.execute(
      db,
    );
    assert.equal(left.rows[0]!.n, 0);
    // FTS5's own check that its index is consistent (a contentless table has no content to compare it with).
    await sql`INSERT INTO search.emails_fts (emails_fts, rank) VALUES ('integrity-check', 0)`.execute(db);
  },
);

test("SQLite: a new email that takes a deleted email's rowid is found by its own text only", sqliteOnly, async () => {
  const db = world.server.app.database.db;
  const first = await deliver('plover first');
  assert.deepEqual(await searchIds('plover'), [first]);
  const rowidOf = async (id: string) =>
    (await sql<{ rowid: number }>`SELECT rowid FROM emails WHERE id = ${id}`.execute(db)).rows[0]?.rowid;
  const reused = await rowidOf(first);
  // The newest email's rowid is the one SQLite gives the next email once it is deleted.
  await db.deleteFrom('emails').where('id', '=', first).execute();
  const second = await deliver('curlew second');
  assert.equal(await rowidOf(second), reused);
  assert.deepEqual(await searchIds('plover'), []);
  assert.deepEqual(await searchIds('curlew'), [second]);
});

test('SQLite: a search database that lost its index is built again from every email', sqliteOnly, async () => {
  const db = world.server.app.database.db;
  const id = await deliver('dunlin rebuilt');
  assert.deepEqual(await searchIds('dunlin'), [id]);
  // What a new, empty search database file holds (attachSearchDatabase creates it so).
  await db.transaction().execute(async (trx) => {
    await sql`DELETE FROM search.emails_fts`.execute(trx);
    await sql`UPDATE search.search_progress SET applied_seq = -1`.execute(trx);
  });
  assert.deepEqual(await searchIds('dunlin'), [id]);
  assert.deepEqual(await searchIds('arrival').then((ids) => ids.length), 80);
  await sql`INSERT INTO search.emails_fts (emails_fts, rank) VALUES ('integrity-check', 0)`.execute(db);
});

test('SQLite: a search database split by an earlier word rule is emptied and built again', sqliteOnly, async () => {
  const { app } = world.server;
  const id = await deliver('İzmir whimbrel');
  assert.deepEqual(await searchIds('İzmir'), [id]);
  // What a search file of the earlier rule held: FTS5's own unicode61 words, which keep `İ` as it is.
  await app.database.db.transaction().execute(async (trx) => {
    await sql`DROP TABLE search.emails_fts`.execute(trx);
    await sql`CREATE VIRTUAL TABLE search.emails_fts USING fts5(subject, sender, recipients, body,
      content='', contentless_delete=1, tokenize='unicode61 remove_diacritics 0')`.execute(trx);
    await sql`INSERT INTO search.emails_fts (rowid, subject, sender, recipients, body)
      SELECT rowid, subject, '', '', '' FROM main.emails`.execute(trx);
    await sql`PRAGMA search.user_version = 0`.execute(trx);
  });
  assert.deepEqual(await searchIds('İzmir'), []);
  // A connection that attaches the search file finds it of another version, as a process started anew would.
  const other = await openDatabase(app.config.database, { attach: attachSearchDatabase });
  await other.close();
  const { rows } = await sql<{ sql: string }>`SELECT sql FROM search.sqlite_master WHERE name = 'emails_fts'`.execute(
    app.database.db,
  );
  assert.match(rows[0]!.sql, /tokenize='ascii'/);
  assert.deepEqual(await searchIds('İzmir'), [id]);
  assert.deepEqual(await searchIds('whimbrel'), [id]);
  assert.deepEqual(await searchIds('arrival').then((ids) => ids.length), 80);
});

test('SQLite on Linux: the indexer thread runs at a lower priority than the rest of the process', {
  skip: TEST_DATABASE_URL
    ? 'the search indexer is SQLite-only'
    : process.platform !== 'linux' && 'nice values are per thread on Linux only',
}, async () => {
  /** Nice value of each of this process's threads by name (the test server runs in this process). */
  const niceByThread = async () => {
    const threads = new Map<string, number[]>();
    for (const task of await readdir('/proc/self/task')) {
      const [comm, stat] = await Promise.all([
        readFile(`/proc/self/task/${task}/comm`, 'utf8').catch(() => ''),
        readFile(`/proc/self/task/${task}/stat`, 'utf8').catch(() => ''),
      ]);
      if (!stat) continue;
      const nice = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[16]);
      threads.set(comm.trim(), [...(threads.get(comm.trim()) ?? []), nice]);
    }
    return threads;
  };
  let threads = await niceByThread();
  for (let tries = 0; tries < 50 && threads.get(SEARCH_INDEXER_THREAD_NAME)?.[0] !== 10; tries++) {
    await sleep(100);
    threads = await niceByThread();
  }
  assert.deepEqual(threads.get(SEARCH_INDEXER_THREAD_NAME), [10]);
  assert.deepEqual(threads.get('node-MainThread'), [0]);
  assert.deepEqual(new Set(threads.get(INGEST_THREAD_NAMES.writer)), new Set([0]));
});

test('the first 20,000 characters of a body are searched, counted as characters, not bytes', async () => {
  // 19,000 two-byte characters: the word after them ends within 20,000 characters, though past 20,000 bytes.
  const text = `${'é'.repeat(19_000)} ptarmigan ${'o'.repeat(1_000)} bittern`;
  const id = await deliver('long body', text);
  assert.deepEqual(await searchIds('ptarmigan'), [id]);
  assert.deepEqual(await searchIds('bittern'), []);
});
