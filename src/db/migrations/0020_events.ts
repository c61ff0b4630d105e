import { type Kysely, sql } from 'kysely';
import { onPostgres } from '../dialect.ts';

/**
 * The account event log behind `GET /api/v2/events` (src/events). On PostgreSQL each row also records the id of the
 * transaction that wrote it: ids are drawn before commit, so rows become visible out of id order, and readers order
 * by (txid, id) instead (see src/events/event-log.ts). A statement trigger announces every insert on the
 * installation's channel; PostgreSQL delivers it only once the transaction has committed.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  if (!onPostgres(db)) {
    await sql`CREATE TABLE events (
      id INTEGER PRIMARY KEY AUTOINCREMENT,
      account_id TEXT NOT NULL,
      type TEXT NOT NULL,
      data TEXT NOT NULL,
      created_at TEXT NOT NULL
    )`.execute(db);
    await db.schema.createIndex('events_account').on('events').columns(['account_id', 'id']).execute();
    return;
  }
  await sql`CREATE TABLE events (
    id bigserial PRIMARY KEY,
    account_id text NOT NULL,
    type text NOT NULL,
    data text NOT NULL,
    created_at text NOT NULL,
    txid xid8 NOT NULL DEFAULT pg_current_xact_id()
  )`.execute(db);
  await db.schema.createIndex('events_account').on('events').columns(['account_id', 'txid', 'id']).execute();
  await sql`CREATE FUNCTION events_announce() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      PERFORM pg_notify('mailroom_events_' || current_schema(), '');
      RETURN NULL;
    END $$`.execute(db);
  await sql`CREATE TRIGGER events_announce AFTER INSERT ON events
    FOR EACH STATEMENT EXECUTE FUNCTION events_announce()`.execute(db);
}
