import { type Expression, type ExpressionBuilder, type SqlBool, sql, type Transaction } from 'kysely';
import { type Clock, isoNow, newId } from '../core/index.ts';
import { type Database, type Db, onPostgres } from '../db/index.ts';

/** Which emails a batch takes. */
export type EmailSelection = (eb: ExpressionBuilder<Database, 'emails'>) => Expression<SqlBool>;

/** Blobs, as the eraser deletes them. */
export interface BlobDeleter {
  delete(key: string): Promise<void>;
}

export interface BatchOptions {
  limit: number;
  /** PostgreSQL: skip rows another transaction holds, so processes sweeping at once take different emails. */
  skipLocked: boolean;
  /** Runs in the batch's transaction once its emails are deleted, with how many were. */
  afterDelete?: (trx: Transaction<Database>, deleted: number) => Promise<void>;
}

/** Deletes the events about the given emails, in the caller's transaction (the events capability's). */
export type EmailEventsDeleter = (trx: Transaction<Database>, emailIds: readonly string[]) => Promise<void>;

/**
 * Deletes emails with everything that holds their content: the rows (their deliveries and attempts go with them, by
 * the foreign keys, and the search index entries: PostgreSQL's vector is in the row, SQLite's index drops the rowid
 * its queue names), threads left without emails (the others count only what is left), the events that told of them
 * (their senders and subjects), and the raw blobs. Expiry and erase alike. A blob is queued in `blob_erasures` in the
 * transaction that deletes its rows and deleted after it commits, once no email row refers to it (the recipients
 * of one message share it), so a crash in between leaves the deletion to finish, never the content behind.
 */
export class MailEraser {
  readonly #db: Db;
  readonly #postgres: boolean;
  readonly #blobs: BlobDeleter;
  readonly #clock: Clock;
  readonly #deleteEmailEvents: EmailEventsDeleter;
  #blobDrain: Promise<number> = Promise.resolve(0);

  constructor(deps: {
    db: Db;
    blobs: BlobDeleter;
    clock: Clock;
    deleteEmailEvents: EmailEventsDeleter;
  }) {
    this.#clock = deps.clock;
    this.#db = deps.db;
    this.#postgres = onPostgres(deps.db);
    this.#blobs = deps.blobs;
    this.#deleteEmailEvents = deps.deleteEmailEvents;
  }

  /** Deletes up to `limit` of the selected emails, oldest first, in one transaction; resolves to how many. */
  async deleteBatch(selection: EmailSelection, options: BatchOptions): Promise<number> {
    const postgres = this.#postgres;
    return this.#db.transaction().execute(async (trx) => {
      let claim = trx
        .selectFrom('emails')
        .select(['id', 'account_id', 'raw_blob_key', 'thread_id'])
        .where(selection)
        .orderBy('received_at')
        .limit(options.limit);
      if (postgres) claim = options.skipLocked ? claim.forUpdate().skipLocked() : claim.forUpdate();
      const rows = await claim.execute();
      if (rows.length === 0) return 0;
      const threadIds = [...new Set(rows.flatMap((row) => (row.thread_id ? [row.thread_id] : [])))].sort();
      // Locked before the emails go: of two transactions emptying one thread, the second then sees the first's
      // deletions and removes the thread.
      if (postgres && threadIds.length > 0) {
        await trx.selectFrom('threads').select('id').where('id', 'in', threadIds).orderBy('id').forUpdate().execute();
      }
      const ids = rows.map((row) => row.id);
      await trx.deleteFrom('emails').where('id', 'in', ids).execute();
      await this.#deleteEmailEvents(trx, ids);
      if (threadIds.length > 0) {
        await trx
          .deleteFrom('threads')
          .where('id', 'in', threadIds)
          .where(({ exists, not, selectFrom }) =>
            not(
              exists(
                selectFrom('emails')
                  .select(sql.lit(1).as('one'))
                  .whereRef('emails.account_id', '=', 'threads.account_id')
                  .whereRef('emails.thread_id', '=', 'threads.id'),
              ),
            ),
          )
          .execute();
        // The threads that keep emails count and date only those left, numbered again from 1, so that the next reply's
        // position (the count plus one) is not one an email already has.
        await trx
          .updateTable('emails')
          .set((eb) => ({
            thread_position: eb
              .selectFrom('emails as earlier')
              .select((e) => e.fn.countAll<number>().as('position'))
              .whereRef('earlier.thread_id', '=', 'emails.thread_id')
              .whereRef('earlier.thread_position', '<=', 'emails.thread_position'),
          }))
          .where('thread_id', 'in', threadIds)
          .execute();
        await trx
          .updateTable('threads')
          .set((eb) => ({
            message_count: eb
              .selectFrom('emails')
              .select((e) => e.fn.countAll<number>().as('count'))
              .whereRef('emails.thread_id', '=', 'threads.id'),
            last_message_at: eb
              .selectFrom('emails')
              .select((e) => e.fn.max('emails.received_at').as('last'))
              .whereRef('emails.thread_id', '=', 'threads.id'),
          }))
          .where('id', 'in', threadIds)
          .execute();
      }
      const now = isoNow(this.#clock);
      await trx
        .insertInto('blob_erasures')
        .values(
          [...new Set(rows.map((row) => row.raw_blob_key))].map((key) => ({
            id: newId('bera'),
            blob_key: key,
            queued_at: now,
          })),
        )
        .execute();
      await options.afterDelete?.(trx, rows.length);
      return rows.length;
    });
  }

  /**
   * Deletes the queued blobs no email row refers to any more, and empties the queue; resolves to how many blobs it
   * deleted. One drain at a time in a process; on PostgreSQL each process takes entries no other holds.
   */
  deleteQueuedBlobs(): Promise<number> {
    const drain = this.#blobDrain.catch(() => 0).then(() => this.#drainQueue());
    this.#blobDrain = drain;
    return drain;
  }

  async #drainQueue(): Promise<number> {
    let deleted = 0;
    for (;;) {
      // SQLite: one process, and a write transaction held through the blob deletions would hold up ingest's writer.
      const slice = this.#postgres
        ? await this.#db.transaction().execute((trx) => this.#deleteSlice(trx))
        : await this.#deleteSlice(this.#db);
      if (slice === undefined) return deleted;
      deleted += slice;
    }
  }

  /** One slice of the queue; undefined when it is empty. */
  async #deleteSlice(db: Db): Promise<number | undefined> {
    let entries = db.selectFrom('blob_erasures').select(['id', 'blob_key']).orderBy('id').limit(QUEUE_SLICE);
    if (this.#postgres) entries = entries.forUpdate().skipLocked();
    const queued = await entries.execute();
    if (queued.length === 0) return undefined;
    const keys = [...new Set(queued.map((entry) => entry.blob_key))];
    const referenced = await db.selectFrom('emails').select('raw_blob_key').where('raw_blob_key', 'in', keys).execute();
    const kept = new Set(referenced.map((row) => row.raw_blob_key));
    const unreferenced = keys.filter((key) => !kept.has(key));
    for (const key of unreferenced) await this.#blobs.delete(key);
    await db
      .deleteFrom('blob_erasures')
      .where(
        'id',
        'in',
        queued.map((entry) => entry.id),
      )
      .execute();
    return unreferenced.length;
  }
}

/** Queue entries handled in one transaction. */
const QUEUE_SLICE = 100;
