import { type Kysely, sql } from 'kysely';
import { onPostgres } from '../dialect.ts';

/**
 * The email an event tells of, as a column with an index: expiring or erasing mail deletes its events (src/events,
 * deleteEmailEvents), and reading the id out of every event's JSON scanned the account's whole log, under SQLite's
 * write lock, for each batch of mail the retention sweep took.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE events ADD COLUMN email_id text`.execute(db);
  const emailId = onPostgres(db) ? sql`data::jsonb ->> 'emailId'` : sql`json_extract(data, '$.emailId')`;
  await sql`UPDATE events SET email_id = ${emailId}`.execute(db);
  await sql`CREATE INDEX events_email ON events (email_id) WHERE email_id IS NOT NULL`.execute(db);
}
