import { sql, type Transaction } from 'kysely';
import { Invalid } from '../core/index.ts';
import { type Database, type Db, insertRows, onPostgres } from '../db/index.ts';

export type EventType =
  | 'email.received'
  | 'delivery.succeeded'
  | 'delivery.failed'
  | 'domain.status_changed'
  | 'alert.raised'
  | 'alert.cleared'
  | 'account.mail_limit_exceeded';

/** One event to append: whose it is, what happened, and a small summary (ids and a few fields, no bodies). */
export interface NewEvent {
  accountId: string;
  type: EventType;
  data: Record<string, unknown>;
}

/** An event as a stream sends it: its position (the SSE id), its type, and its data as JSON text. */
export interface StreamedEvent {
  position: string;
  type: EventType;
  data: string;
}

/**
 * Where a reader is in an account's log: after the row (txid, id). SQLite commits in id order (one writer), so there
 * txid is always null. PostgreSQL draws ids before commit, so a row with a later id can become visible before one
 * with an earlier id; it is read in (txid, id) order instead, and only rows whose transaction is older than every
 * transaction still running (`txid < pg_snapshot_xmin`): no transaction that could still commit has a smaller txid.
 */
export interface Cursor {
  txid: string | null;
  id: string;
}

/** Events older than this are pruned; a stream resumed from before them starts at the oldest one kept. */
const EVENT_RETENTION_MS = 7 * 24 * 3600 * 1000;

/** The most events one read returns; a full page is followed by another read at once. */
export const EVENT_PAGE_SIZE = 500;

/**
 * Appends events inside the caller's transaction, so they exist exactly when what they report was committed, stamped
 * `createdAt` by the caller's clock. The caller tells the event hub after its commit (EventHub.appended), which wakes
 * this process's streams and, on PostgreSQL, announces the events to the other processes.
 */
export async function appendEvents(
  trx: Transaction<Database>,
  events: readonly NewEvent[],
  createdAt: string,
): Promise<void> {
  await insertRows(
    trx,
    'events',
    events.map((event) => eventRow(event, createdAt)),
  );
}

/**
 * The row appendEvents inserts for `event`, for a statement that writes its event with what it reports (delivery's
 * attempt record on PostgreSQL, see OutboxStore.finishAttempt).
 */
export function eventRow(event: NewEvent, createdAt: string) {
  const { emailId } = event.data;
  return {
    account_id: event.accountId,
    type: event.type,
    data: JSON.stringify(event.data),
    email_id: typeof emailId === 'string' ? emailId : null,
    created_at: createdAt,
  };
}

/** The SSE id of a row: `<id>` on SQLite, `<txid>-<id>` on PostgreSQL. Clients treat it as opaque. */
function positionOf(cursor: Cursor): string {
  return cursor.txid === null ? cursor.id : `${cursor.txid}-${cursor.id}`;
}

/** The largest id or txid a position can hold: both databases keep them in signed 64-bit integers. */
const MAX_POSITION_NUMBER = 2n ** 63n - 1n;

/** The cursor a client's Last-Event-ID names; Invalid when it is not a position this database writes. */
export function parsePosition(db: Db, position: string): Cursor {
  const match = onPostgres(db) ? /^(\d{1,19})-(\d{1,19})$/.exec(position) : /^()(\d{1,15})$/.exec(position);
  // Nineteen digits reach past 2^63 - 1: such a position was never written, and casting it would fail every read.
  if (!match || match.slice(1).some((number) => number !== '' && BigInt(number) > MAX_POSITION_NUMBER)) {
    throw new Invalid('Invalid Last-Event-ID');
  }
  return { txid: match[1] || null, id: match[2]! };
}

/** The position of "now": a reader starting here gets the events committed from here on. */
export async function currentCursor(db: Db): Promise<Cursor> {
  if (onPostgres(db)) {
    // Every transaction that can still commit has a txid at or above xmin, so (xmin, 0) precedes all of their rows.
    const { rows } = await sql<{ xmin: string }>`select pg_snapshot_xmin(pg_current_snapshot())::text as xmin`.execute(
      db,
    );
    return { txid: rows[0]!.xmin, id: '0' };
  }
  const row = await db
    .selectFrom('events')
    .select((eb) => eb.fn.max('id').as('last'))
    .executeTakeFirst();
  return { txid: null, id: String(row?.last ?? 0) };
}

/**
 * The account's events after `cursor` that may be served: up to a page, in log order. `heldBack` says that rows
 * after them are committed but not yet servable (PostgreSQL: an older transaction is still running).
 */
export async function readEvents(
  db: Db,
  accountId: string,
  cursor: Cursor,
): Promise<{ events: StreamedEvent[]; last: Cursor; heldBack: boolean }> {
  if (!onPostgres(db)) {
    const rows = await db
      .selectFrom('events')
      .select(['id', 'type', 'data', 'created_at'])
      .where('account_id', '=', accountId)
      .where('id', '>', Number(cursor.id))
      .orderBy('id')
      .limit(EVENT_PAGE_SIZE)
      .execute();
    const events = rows.map((row) => toStreamed(row, { txid: null, id: String(row.id) }));
    const last = rows.length > 0 ? { txid: null, id: String(rows.at(-1)!.id) } : cursor;
    return { events, last, heldBack: false };
  }
  const { rows } = await sql<{
    id: string;
    txid: string;
    type: string;
    data: string;
    created_at: string;
    ready: boolean;
  }>`
    select id::text as id, txid::text as txid, type, data, created_at,
      txid < pg_snapshot_xmin(pg_current_snapshot()) as ready
    from events
    where account_id = ${accountId} and (txid, id) > (${cursor.txid}::xid8, ${cursor.id}::bigint)
    -- The table's columns, not the text ones selected under the same names: '10027' sorts before '6693'.
    order by events.txid, events.id
    limit ${EVENT_PAGE_SIZE}`.execute(db);
  const ready = rows.filter((row) => row.ready);
  const events = ready.map((row) => toStreamed(row, { txid: row.txid, id: row.id }));
  const lastRow = ready.at(-1);
  return {
    events,
    last: lastRow ? { txid: lastRow.txid, id: lastRow.id } : cursor,
    heldBack: ready.length < rows.length,
  };
}

function toStreamed(row: { type: string; data: string; created_at: string }, cursor: Cursor): StreamedEvent {
  return {
    position: positionOf(cursor),
    type: row.type as EventType,
    data: JSON.stringify({ ...JSON.parse(row.data), createdAt: row.created_at }),
  };
}

/**
 * Deletes events older than the retention, oldest first in bounded batches (a long backlog does not hold the
 * database in one statement). Ids follow time closely enough that the oldest ids are the old rows.
 */
export async function pruneEvents(db: Db, now: Date, batch = 5000): Promise<number> {
  const cutoff = new Date(now.getTime() - EVENT_RETENTION_MS).toISOString();
  let deleted = 0;
  for (let round = 0; round < 1000; round++) {
    const oldest = await db.selectFrom('events').select(['id', 'created_at']).orderBy('id').limit(batch).execute();
    const expired = oldest.findIndex((row) => row.created_at >= cutoff);
    const count = expired === -1 ? oldest.length : expired;
    if (count === 0) break;
    await db
      .deleteFrom('events')
      .where('id', '<=', oldest[count - 1]!.id)
      .execute();
    deleted += count;
    if (count < batch) break;
  }
  return deleted;
}

/**
 * Deletes the events about the given emails (received, delivered, failed): mail that is erased or expires
 * takes what they told of each email too, its sender and subject among it.
 */
export async function deleteEmailEvents(db: Db | Transaction<Database>, emailIds: readonly string[]): Promise<void> {
  if (emailIds.length === 0) return;
  await db.deleteFrom('events').where('email_id', 'in', emailIds).execute();
}
