import { type Kysely, sql } from 'kysely';
import { onPostgres } from '../dialect.ts';

/**
 * SQLite: the search index moves to a database file of its own (see src/search/sqlite-search-index.ts), which a
 * thread of its own keeps up to date. In the main file, FTS5 work held the one write lock that ingest's commits
 * need: while a batch of emails was indexed, no message could be stored.
 *
 * The main file keeps only a queue of the emails whose index entry is out of date: storing, changing or deleting an
 * email queues its rowid, and the indexer brings that rowid's entry in line with what the row holds then. Each entry
 * has a sequence number that is never reused (AUTOINCREMENT), by which the index records how far it has applied the
 * queue. The old index and its queue are dropped: a search database without that record is built from every email
 * (see src/search/sqlite-search-index.ts). PostgreSQL is unchanged.
 */
const INDEXED_COLUMNS = 'subject, from_name, from_address, recipient, to_json, cc_json, bcc_json, text_body';

export async function up(db: Kysely<unknown>): Promise<void> {
  if (onPostgres(db)) return;
  for (const trigger of [
    'emails_search_queue',
    'emails_search_requeue',
    'emails_search_unindex',
    'emails_search_dequeue',
  ]) {
    await sql.raw(`DROP TRIGGER main.${trigger}`).execute(db);
  }
  await sql`DROP TABLE main.emails_search_pending`.execute(db);
  await sql`DROP TABLE main.emails_fts`.execute(db);
  await sql`
    CREATE TABLE main.emails_search_queue (seq INTEGER PRIMARY KEY AUTOINCREMENT, email_rowid INTEGER NOT NULL)`.execute(
    db,
  );
  const enqueue = (row: 'new' | 'old') => `INSERT INTO emails_search_queue (email_rowid) VALUES (${row}.rowid);`;
  await sql
    .raw(`CREATE TRIGGER main.emails_search_stored AFTER INSERT ON emails BEGIN ${enqueue('new')} END`)
    .execute(db);
  await sql
    .raw(
      `CREATE TRIGGER main.emails_search_changed AFTER UPDATE OF ${INDEXED_COLUMNS} ON emails BEGIN ${enqueue('new')} END`,
    )
    .execute(db);
  await sql
    .raw(`CREATE TRIGGER main.emails_search_deleted AFTER DELETE ON emails BEGIN ${enqueue('old')} END`)
    .execute(db);
}
