import { type Kysely, sql } from 'kysely';
import { onPostgres } from '../dialect.ts';

/**
 * SQLite: new emails enter the search index in batches instead of in the transaction that stores them (see
 * src/search/sqlite-search-index.ts). An insert only queues the email's rowid in `emails_search_pending`; indexing a
 * batch at once writes one FTS5 segment for it, where indexing each commit's few emails wrote a segment per commit
 * that FTS5 then merged over and over.
 *
 * An email is in exactly one of the two places: indexed, or queued. So a change to an indexed email's searched
 * fields takes it out of the index and queues it again (the batch indexes its new values), and a deleted email is
 * taken out of whichever place holds it. PostgreSQL keeps its generated column, which is always current.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  if (onPostgres(db)) return;
  await sql`CREATE TABLE emails_search_pending (email_rowid INTEGER PRIMARY KEY)`.execute(db);
  await sql`DROP TRIGGER emails_fts_insert`.execute(db);
  await sql`DROP TRIGGER emails_fts_update`.execute(db);
  await sql`DROP TRIGGER emails_fts_delete`.execute(db);
  await sql`
    CREATE TRIGGER emails_search_queue AFTER INSERT ON emails
    BEGIN INSERT INTO emails_search_pending (email_rowid) VALUES (new.rowid); END`.execute(db);
  const indexed = 'NOT EXISTS (SELECT 1 FROM emails_search_pending WHERE email_rowid = old.rowid)';
  await sql
    .raw(
      `CREATE TRIGGER emails_search_requeue
        AFTER UPDATE OF subject, from_name, from_address, recipient, to_json, cc_json, bcc_json, text_body ON emails
        WHEN ${indexed}
        BEGIN
          DELETE FROM emails_fts WHERE rowid = old.rowid;
          INSERT INTO emails_search_pending (email_rowid) VALUES (new.rowid);
        END`,
    )
    .execute(db);
  // BEFORE, so that the email's place is looked up before the AFTER trigger below takes it off the queue.
  await sql
    .raw(
      `CREATE TRIGGER emails_search_unindex BEFORE DELETE ON emails WHEN ${indexed}
        BEGIN DELETE FROM emails_fts WHERE rowid = old.rowid; END`,
    )
    .execute(db);
  await sql`
    CREATE TRIGGER emails_search_dequeue AFTER DELETE ON emails
    BEGIN DELETE FROM emails_search_pending WHERE email_rowid = old.rowid; END`.execute(db);
}
