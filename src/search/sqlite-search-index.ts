import type { DatabaseSync } from 'node:sqlite';
import { type Kysely, sql } from 'kysely';
import type { Database, SqliteConfig } from '../db/index.ts';
import { SEARCH_FIELD_CHARS, searchText, WORD_RULE_VERSION } from './search-words.ts';

/**
 * SQLite's search index (FTS5) lives in a database file of its own, next to the main one, attached to the
 * connections that search or index as `search`. The main file queues the rowid of every email stored, changed or
 * deleted (migration 0016); `indexQueuedEmails` brings those rowids' index entries in line with the rows, a slice of
 * the queue at a time. The search indexer's thread runs it as the queue fills (see search-indexer.ts), and a search
 * runs it first (`catchUpSearchIndex`), so a search finds every email stored before it began.
 *
 * Why a file of its own: SQLite lets one connection write a database file at a time, and in the main file each
 * batch indexed held up ingest's commits, with every message in flight. Here the indexer writes only the search
 * file, and takes the main file's lock only to trim the queue.
 *
 * Crash safety: the search file records the last queue entry it applied, in the transaction that applies it, and the
 * queue is trimmed only up to what is recorded there. A search file without that record (new, or deleted while
 * Mailroom was stopped) is built again from every email. Applying an entry deletes the rowid's index entry before
 * inserting the row's current one, so an entry applied twice changes nothing.
 *
 * The fields are those of migration 0005. The body is cut to its first 20,000 characters as there, but `substr`
 * counts characters through the whole of it, which costs the indexer CPU on every body; a body of at most 20,000
 * bytes cannot be longer, and its byte length is known without reading it, so only longer ones are counted.
 */

/** Queue entries applied in one transaction of the search file. */
const SLICE_ENTRIES = 256;
/** `applied_seq` of a search file that must first be built from every email. */
const NOT_BUILT = -1;

/** The search database's file: `mailroom.sqlite` has `mailroom-search.sqlite`. */
function searchDatabaseFile(file: string): string {
  return file.endsWith('.sqlite') ? `${file.slice(0, -'.sqlite'.length)}-search.sqlite` : `${file}-search`;
}

/**
 * Attaches the search database to `database` as `search`, creating its tables if it has none. Only connections
 * that search or index attach it: a write transaction (BEGIN IMMEDIATE) takes the write lock of every database its
 * connection has attached, so ingest's writer, which has no need of the index, must not.
 *
 * FTS5 reads each field as the word rule's words separated by spaces (searchText, the `search_text` SQL function),
 * with the `ascii` tokenizer, which keeps every non-ASCII character within its word: the words are exactly those of
 * a search and of PostgreSQL's vectors, where FTS5's own `unicode61` folded hundreds of letters otherwise (`İ`, `ς`).
 */
export function attachSearchDatabase(database: DatabaseSync, { file, synchronous }: SqliteConfig): void {
  database.function('search_text', { deterministic: true }, (text) => searchText(String(text ?? '')));
  database.prepare('ATTACH DATABASE ? AS search').run(searchDatabaseFile(file));
  database.exec('PRAGMA search.journal_mode = WAL');
  // The queue is trimmed up to what the search file records, so that record must be durable before the trim is.
  database.exec(`PRAGMA search.synchronous = ${synchronous}`);
  database.exec('PRAGMA search.cache_size = -16384');
  const version = () => (database.prepare('PRAGMA search.user_version').get() as { user_version: number }).user_version;
  // Read first without a lock: a file of this version, nearly always, needs no write.
  if (version() === WORD_RULE_VERSION) return;
  database.exec('BEGIN IMMEDIATE');
  try {
    if (version() !== WORD_RULE_VERSION) {
      database.exec(`
        DROP TABLE IF EXISTS search.emails_fts;
        CREATE VIRTUAL TABLE search.emails_fts USING fts5(subject, sender, recipients, body,
          content='', contentless_delete=1, tokenize='ascii');
        CREATE TABLE IF NOT EXISTS search.search_progress (
          id INTEGER PRIMARY KEY CHECK (id = 1),
          applied_seq INTEGER NOT NULL);
        INSERT OR REPLACE INTO search.search_progress (id, applied_seq) VALUES (1, ${NOT_BUILT});
        PRAGMA search.user_version = ${WORD_RULE_VERSION};`);
    }
    database.exec('COMMIT');
  } catch (error) {
    database.exec('ROLLBACK');
    throw error;
  }
}

const jsonText = (column: string) =>
  `coalesce(CASE WHEN json_valid(e.${column}) THEN json_extract(e.${column}, '$.text') END, '')`;

/** The words of a field's first SEARCH_FIELD_CHARS characters. */
const indexed = (text: string) => `search_text(substr(${text}, 1, ${SEARCH_FIELD_CHARS}))`;

const INDEX_ROWS = sql.raw(`
  INSERT INTO search.emails_fts (rowid, subject, sender, recipients, body)
  SELECT e.rowid,
    ${indexed('e.subject')},
    ${indexed(`coalesce(e.from_name, '') || ' ' || coalesce(e.from_address, '')`)},
    ${indexed(`e.recipient || ' ' || ${jsonText('to_json')} || ' ' || ${jsonText('cc_json')} || ' ' || ${jsonText('bcc_json')}`)},
    ${indexed('e.text_body')}
  FROM main.emails AS e WHERE e.rowid IN`);

/** The last queue entry the search file records as applied (NOT_BUILT for a file not built yet). */
async function recordedSeq(db: Kysely<Database>): Promise<number> {
  const { rows } = await sql<{ seq: number }>`SELECT applied_seq AS seq FROM search.search_progress`.execute(db);
  return rows[0]!.seq;
}

/** The last queue entry applied; a search file not built yet first has every email queued, and applied none. */
async function appliedSeq(db: Kysely<Database>): Promise<number> {
  const recorded = await recordedSeq(db);
  if (recorded !== NOT_BUILT) return recorded;
  // In two transactions, main file first: if the second is lost, the emails are queued twice, which is harmless.
  await sql`INSERT INTO main.emails_search_queue (email_rowid) SELECT rowid FROM main.emails`.execute(db);
  await sql`UPDATE search.search_progress SET applied_seq = 0 WHERE applied_seq = ${NOT_BUILT}`.execute(db);
  return 0;
}

async function lastQueuedSeq(db: Kysely<Database>): Promise<number> {
  const { rows } = await sql<{ last: number | null }>`SELECT max(seq) AS last FROM main.emails_search_queue`.execute(
    db,
  );
  return rows[0]?.last ?? 0;
}

/**
 * Applies the next slice of the queue, up to entry `upTo`, to the index; resolves to whether there was one.
 */
export async function indexQueuedEmails(db: Kysely<Database>, upTo = Number.MAX_SAFE_INTEGER): Promise<boolean> {
  const from = await appliedSeq(db);
  // Read first without a lock: most calls find nothing queued, and a write transaction would cost a sync.
  if (Math.min(await lastQueuedSeq(db), upTo) <= from) return false;
  const applied = await db.connection().execute(async (connection) => {
    // A deferred transaction whose first statement writes the search file locks only that file: the main file is
    // only read, from a snapshot, while ingest goes on committing.
    await sql`BEGIN DEFERRED`.execute(connection);
    try {
      await sql`UPDATE search.search_progress SET applied_seq = applied_seq`.execute(connection);
      const start = await recordedSeq(connection);
      const { rows } = await sql<{ last: number | null }>`
        SELECT max(seq) AS last FROM (
          SELECT seq FROM main.emails_search_queue WHERE seq > ${start} AND seq <= ${upTo}
          ORDER BY seq LIMIT ${SLICE_ENTRIES})`.execute(connection);
      const end = rows[0]?.last ?? null;
      if (end !== null) {
        const rowids = sql`(SELECT email_rowid FROM main.emails_search_queue WHERE seq > ${start} AND seq <= ${end})`;
        await sql`DELETE FROM search.emails_fts WHERE rowid IN ${rowids}`.execute(connection);
        await sql`${INDEX_ROWS} ${rowids}`.execute(connection);
        await sql`UPDATE search.search_progress SET applied_seq = ${end}`.execute(connection);
      }
      await sql`COMMIT`.execute(connection);
      return end;
    } catch (error) {
      await sql`ROLLBACK`.execute(connection);
      throw error;
    }
  });
  if (applied === null) return false;
  await trimQueue(db, applied);
  return true;
}

/**
 * Deletes the queue's entries up to `applied`, without syncing the main file's WAL. The trim holds the main file's
 * write lock, and a synced commit held it through an fsync, long enough to send ingest's writer, meeting the lock at
 * BEGIN, to sleep in SQLite's busy handler. A trim lost in a crash only leaves applied entries queued, and the next
 * trim deletes them; the search file's record is already durable (synced before this runs), which is what matters.
 * The connection is held throughout, so nothing else runs on it at the lower durability level.
 */
async function trimQueue(db: Kysely<Database>, applied: number): Promise<void> {
  await db.connection().execute(async (connection) => {
    const { rows } = await sql<{ synchronous: number }>`PRAGMA main.synchronous`.execute(connection);
    const level = rows[0]!.synchronous;
    await sql`PRAGMA main.synchronous = NORMAL`.execute(connection);
    try {
      await sql`DELETE FROM main.emails_search_queue WHERE seq <= ${applied}`.execute(connection);
    } finally {
      await sql.raw(`PRAGMA main.synchronous = ${level}`).execute(connection);
    }
  });
}

/**
 * Applies the queue up to its last entry at the time of the call, so that a search that runs next finds every
 * email stored before. It gives the event loop a turn between slices.
 */
export async function catchUpSearchIndex(db: Kysely<Database>): Promise<void> {
  // First, so that a search file not built yet has queued every email before the last entry is read.
  await appliedSeq(db);
  const last = await lastQueuedSeq(db);
  while (await indexQueuedEmails(db, last)) await new Promise((resolve) => setImmediate(resolve));
}
