import { sql, type Transaction } from 'kysely';
import type { Database, EmailsTable, ThreadsTable } from '../db/index.ts';
import { insertTables, onPostgres, preparedQuery, textArray } from '../db/index.ts';
import type { DeliveryJob, JobTarget } from '../delivery/index.ts';
import { eventRow, type NewEvent } from '../events/index.ts';
import type { PreparedMessage } from './email-writer.ts';
import { COPY_COLUMNS, type StoredCopy } from './retried-copy.ts';
import { addToThread, latest, type placeInThread, threadingMessageIds } from './threading.ts';

/**
 * The account's stored emails with any of the given Message-IDs, and their threads: one lookup that serves both the
 * check for a retried copy (the new email's own Message-ID) and threading (the ones it replies to, and its own). The
 * account's Message-ID index finds the few of them; without ORDER BY, so that the planner keeps to that index.
 */
const storedByMessageId = preparedQuery((db, { accountId, messageIds }: { accountId: string; messageIds: string[] }) =>
  db
    .selectFrom('emails')
    .leftJoin('threads', 'threads.id', 'emails.thread_id')
    .select([
      ...COPY_COLUMNS.map((column) => `emails.${column}` as const),
      'emails.message_id',
      'emails.thread_id',
      'threads.message_count',
    ])
    .where('emails.account_id', '=', accountId)
    .where('emails.message_id', 'in', messageIds),
);

/**
 * The locks' statement, its keys one binary `text[]` parameter (see textArray): named, as its plan reads no table, so
 * that it is parsed once per connection rather than at every transaction; sent ahead, with the lookup after it, which
 * PostgreSQL runs once the locks are held.
 */
const takeAdvisoryLocks = preparedQuery(
  (db, { keys }: { keys: Buffer }) => ({
    compile: () =>
      sql`select pg_advisory_xact_lock(k) from (select distinct hashtextextended(key, 0) as k from unnest(${keys}::text[]) as key order by k) as locks`.compile(
        db,
      ),
  }),
  { named: true, sentAhead: true },
);

/**
 * PostgreSQL: a transaction lock per account and Message-ID the batch looks up, taken in one order, so that another
 * process storing the same message at once (a sender retrying at another MX) waits for this commit and then finds
 * the copy, rather than both reading none and storing it twice.
 */
async function lockMessageIds(trx: Transaction<Database>, idsByAccount: Map<string, Set<string>>): Promise<void> {
  const keys = [...idsByAccount].flatMap(([accountId, ids]) => [...ids].map((id) => `${accountId} ${id}`));
  if (keys.length === 0) return;
  await takeAdvisoryLocks(trx, { keys: textArray(keys) });
}

/** A stored email that ingest's lookups can find: read from the database, or stored earlier in this batch. */
export type StoredRow = StoredCopy & Pick<EmailsTable, 'message_id' | 'thread_id'> & { message_count: number | null };

/**
 * What one batch (one transaction) reads once and writes at its end: the stored emails with its messages' Message-IDs,
 * the rows to insert, and the threads' new message counts. A message sees what the batch's earlier messages stored,
 * as if each had been written on its own.
 */
export class Batch {
  readonly stored: StoredRow[] = [];
  readonly threads: ThreadsTable[] = [];
  /** Existing threads joined in this batch: their new message count and time. */
  readonly threadUpdates = new Map<string, { position: number; now: string }>();
  readonly emails: EmailsTable[] = [];
  readonly deliveries: DeliveryJob[] = [];
  readonly events: NewEvent[] = [];
  readonly targets = new Map<string, Promise<JobTarget | null>>();

  /** Reads the stored emails of each account with any of the Message-IDs its messages look up, in one query each. */
  async read(trx: Transaction<Database>, messages: readonly PreparedMessage[]): Promise<void> {
    const idsByAccount = new Map<string, Set<string>>();
    for (const message of messages) {
      const ids = threadingMessageIds(message.parsed);
      if (ids.length === 0) continue;
      for (const route of message.recipients) {
        const set = idsByAccount.get(route.accountId) ?? new Set();
        for (const id of ids) set.add(id);
        idsByAccount.set(route.accountId, set);
      }
    }
    const postgres = onPostgres(trx);
    if (postgres) await lockMessageIds(trx, idsByAccount);
    for (const [accountId, ids] of idsByAccount) {
      this.stored.push(...(await storedByMessageId(trx, { accountId, messageIds: [...ids] })));
    }
    if (postgres) await this.lockThreads(trx);
  }

  /**
   * PostgreSQL: locks the threads the batch may join, in id order as the eraser does, and takes their message counts
   * again. Another process may have added to one since the read above, or be adding now: positions then follow its
   * count rather than repeat it, and a thread erased meanwhile is gone here too (its joiner starts a new one).
   */
  private async lockThreads(trx: Transaction<Database>): Promise<void> {
    const ids = [...new Set(this.stored.flatMap((row) => (row.thread_id ? [row.thread_id] : [])))].sort();
    if (ids.length === 0) return;
    const rows = await trx
      .selectFrom('threads')
      .select(['id', 'message_count'])
      .where('id', 'in', ids)
      .orderBy('id')
      .forUpdate()
      .execute();
    const counts = new Map(rows.map((row) => [row.id, row.message_count]));
    for (const row of this.stored) if (row.thread_id !== null) row.message_count = counts.get(row.thread_id) ?? null;
  }

  /** The account's stored emails with any of `messageIds`, each with its thread's current message count. */
  known(accountId: string, messageIds: readonly string[]): StoredRow[] {
    if (messageIds.length === 0) return [];
    return this.withCounts(
      this.stored.filter(
        (row) => row.account_id === accountId && row.message_id !== null && messageIds.includes(row.message_id),
      ),
    );
  }

  /** `rows`, each with its thread's message count as this batch has left it. */
  withCounts(rows: readonly StoredRow[]): StoredRow[] {
    return rows.map((row) => {
      const position = row.thread_id === null ? undefined : this.threadCount(row.thread_id);
      return position === undefined ? row : { ...row, message_count: position };
    });
  }

  private threadCount(threadId: string): number | undefined {
    return (
      this.threadUpdates.get(threadId)?.position ?? this.threads.find((thread) => thread.id === threadId)?.message_count
    );
  }

  /** Puts a new email into its thread: a new thread's row, or the joined thread's new count. */
  joinThread(placement: ReturnType<typeof placeInThread>, now: string): void {
    if (placement.newThread) {
      this.threads.push(placement.newThread);
      return;
    }
    const created = this.threads.find((thread) => thread.id === placement.threadId);
    if (created) {
      const last = latest(created.last_message_at, now);
      Object.assign(created, { message_count: placement.position, last_message_at: last, updated_at: last });
    } else {
      const last = latest(this.threadUpdates.get(placement.threadId)?.now, now);
      this.threadUpdates.set(placement.threadId, { position: placement.position, now: last });
    }
  }

  async write(trx: Transaction<Database>): Promise<void> {
    for (const [id, { position, now }] of this.threadUpdates) await addToThread(trx, { id, position, now });
    const createdAt = new Date().toISOString();
    await insertTables(trx, [
      { table: 'threads', rows: this.threads },
      { table: 'emails', rows: this.emails },
      { table: 'deliveries', rows: this.deliveries },
      { table: 'events', rows: this.events.map((event) => eventRow(event, createdAt)) },
    ]);
  }
}
