import { type Kysely, sql } from 'kysely';
import type { Database } from './schema.ts';
import { SEARCH_BODY_CHARS } from './search-words.ts';

/**
 * SQLite's search index (FTS5, see migrations 0005 and 0013) takes new emails in batches: storing an email queues
 * it, and `indexPendingEmails` indexes every queued email at once. Ingest's writer calls it every so many emails or
 * milliseconds, and a search calls it first, so a search finds every email stored before it began.
 *
 * Why batches: the insert trigger that indexed each email in the commit that stored it made storing an email cost
 * about a quarter more. In a micro-benchmark of ingest's writer (10 KB messages, on a 2-core guest) its CPU per
 * message was 0.160-0.173 ms against 0.203-0.209 with the trigger at 15 messages a commit, and 0.214 against 0.274
 * at 4. The batches also spare FTS5 a small segment per commit to write and merge.
 *
 * The fields are those of migration 0005, which indexed the emails stored before the queue existed. The body is cut
 * to its first 20,000 characters as there, but `substr` counts characters through the whole of it, a twentieth of the
 * writer's CPU for 10 KB bodies; a body of at most 20,000 bytes cannot be longer, and its byte length is known
 * without reading it, so only longer ones are counted.
 */

const jsonText = (column: string) =>
  `coalesce(CASE WHEN json_valid(e.${column}) THEN json_extract(e.${column}, '$.text') END, '')`;

const INDEX_QUEUED = sql.raw(`
  INSERT INTO emails_fts (rowid, subject, sender, recipients, body)
  SELECT e.rowid,
    coalesce(e.subject, ''),
    coalesce(e.from_name, '') || ' ' || coalesce(e.from_address, ''),
    e.recipient || ' ' || ${jsonText('to_json')} || ' ' || ${jsonText('cc_json')} || ' ' || ${jsonText('bcc_json')},
    coalesce(CASE WHEN octet_length(e.text_body) > ${SEARCH_BODY_CHARS} THEN substr(e.text_body, 1, ${SEARCH_BODY_CHARS}) ELSE e.text_body END, '')
  FROM emails_search_pending AS p JOIN emails AS e ON e.rowid = p.email_rowid`);

/** Indexes every queued email; run it inside a write transaction (it reads the queue, then empties it). */
export async function indexPendingEmails(trx: Kysely<Database>): Promise<void> {
  await INDEX_QUEUED.execute(trx);
  await sql`DELETE FROM emails_search_pending`.execute(trx);
}

/**
 * Indexes the queued emails, if any, in a transaction of its own: a search runs it first, so that it finds every
 * email stored before it began. Only a read when nothing is queued.
 */
export async function catchUpSearchIndex(db: Kysely<Database>): Promise<void> {
  const { rows } = await sql<{ queued: number }>`SELECT EXISTS (SELECT 1 FROM emails_search_pending) AS queued`.execute(
    db,
  );
  if (rows[0]?.queued === 1) await db.transaction().execute((trx) => indexPendingEmails(trx));
}
