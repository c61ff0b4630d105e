import { type Kysely, sql } from 'kysely';
import { onPostgres } from '../dialect.ts';

/**
 * PostgreSQL: events are no longer announced by a trigger at every commit that appends them. A transaction that
 * NOTIFYs commits only after every other notifying transaction on the server, so each attempt and each ingest
 * commit waited for the others' WAL flushes; the processes now announce their own commits, a few at a time (see
 * EventHub.appended).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  if (!onPostgres(db)) return;
  await sql`DROP TRIGGER events_announce ON events`.execute(db);
  await sql`DROP FUNCTION events_announce()`.execute(db);
}
