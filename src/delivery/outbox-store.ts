import { type Selectable, type SqlBool, sql, type Transaction } from 'kysely';
import {
  type Database,
  type Db,
  type DeliveriesTable,
  fromFlag,
  GroupCommitter,
  lockWaitingSession,
  type Session,
} from '../db/index.ts';
import { appendEvents } from '../events/index.ts';
import { type AttemptRecorded, deliveryEvent, recordAttempts } from './attempt-record.ts';

/** A job as delivery runs it; `queued_at` is only the queue gauges' (and a new job's is null, left out of its insert). */
export type DeliveryJob = Omit<Selectable<DeliveriesTable>, 'queued_at'>;

/**
 * Unfinished jobs, as the partial index `deliveries_unfinished_due` (migration 0032) holds them: written out, not bound,
 * for SQLite uses a partial index only for a condition it sees is the index's own.
 */
const UNFINISHED = sql<SqlBool>`${sql.ref('status')} in ('pending', 'processing')`;

/** How long a finished attempt waits for others to share its commit, at most. */
const ATTEMPTS_GATHER_MS = 5;

/** What one attempt did, as the log and the delivery row record it. */
export interface AttemptRecord {
  startedAt: Date;
  durationMs: number;
  success: boolean;
  statusCode: number | null;
  responseBody: string | null;
  error: string | null;
  url: string | null;
  /** Forward recipients and each one's outcome. */
  recipients: Array<{
    address: string;
    status: 'sent' | 'failed' | 'skipped';
    response?: string;
    error?: string;
  }> | null;
  /** Extra members for the delivery's `response_data` (e.g. what was trimmed from the body). */
  details?: Record<string, unknown>;
}

/** What happens to the job after an attempt; a failed webhook whose receiver answered 410 had its endpoint switched off. */
export type AttemptResult =
  | { status: 'success' }
  | { status: 'failed'; endpointDeactivated?: boolean }
  | { status: 'retry'; at: Date };

/** A delivery that ended failed after an attempt: no retry is left, or the receiver answered 410 Gone. */
export interface FailedDelivery {
  accountId: string;
  deliveryId: string;
  emailId: string;
  targetType: DeliveryJob['target_type'];
  targetId: string;
  /** The endpoint's (or legacy webhook's) name. */
  targetName: string;
  /** The receiver answered 410 and its endpoint (or legacy webhook) was deactivated. */
  endpointDeactivated: boolean;
  attempts: number;
  statusCode: number | null;
  error: string | null;
}

/** Told of each delivery that ends failed (health alerts listen): in its recording transaction, and after the commit. */
export interface DeliveryFailureObserver {
  /** Runs in the transaction that records the failure; what it writes commits with it. */
  failed(trx: Transaction<Database>, failure: FailedDelivery): Promise<void>;
  /** A transaction that told of failures has committed. */
  committed(): void;
}

/** An attempt made on a claimed job, waiting to be recorded. */
export interface FinishedAttempt {
  job: DeliveryJob;
  /** The worker holding the job's lease. */
  owner: string;
  attempt: AttemptRecord;
  result: AttemptResult;
  /** The name of the endpoint or legacy webhook attempted. */
  targetName: string;
}

/**
 * The outbox tables. Every change to a claimed job is fenced by `lease_owner`, so a worker whose lease was taken over
 * (it stalled past the lease) cannot overwrite the new owner's state.
 */
export class OutboxStore {
  private readonly db: Db;
  private readonly postgres: boolean;
  private readonly attempts: GroupCommitter;
  /** Where every change to the outbox runs (see the constructor). */
  private readonly session: Session;
  /** Called after a commit that appended events (delivery.succeeded, delivery.failed). */
  private readonly eventsAppended: () => void;
  private readonly failures: DeliveryFailureObserver | undefined;

  /**
   * `maxAttemptsBatch`: attempts recorded at once without waiting for others, e.g. every delivery slot's.
   * `attemptTransactions`: transactions recording attempts at once on PostgreSQL (SQLite has one writer). With more,
   * attempts finishing while one commits start another instead of joining the next: more commits, smaller batches.
   * `failures` is told of each delivery that ends failed, in the transaction that records it (health alerts).
   */
  constructor(
    db: Db,
    options: {
      kind: 'sqlite' | 'postgres';
      maxAttemptsBatch: number;
      attemptTransactions: number;
      eventsAppended: () => void;
      failures?: DeliveryFailureObserver;
    },
  ) {
    this.db = db;
    this.postgres = options.kind === 'postgres';
    this.eventsAppended = options.eventsAppended;
    this.failures = options.failures;
    // On SQLite the outbox commits unsynced (a power loss only makes its latest jobs due again: at-least-once) and
    // waits for the write lock on a timer, never with the event loop stopped, for as long as it is held: an attempt
    // whose record gave up would be sent again once its lease ran out (docs/internals.md, delivery).
    this.session = this.postgres ? (work) => work(db) : lockWaitingSession(db);
    this.attempts = new GroupCommitter(db, {
      maxBatch: options.maxAttemptsBatch,
      concurrency: this.postgres ? options.attemptTransactions : 1,
      gatherMs: ATTEMPTS_GATHER_MS,
      session: this.session,
    });
  }

  /**
   * Claims up to `limit` due jobs: pending ones whose time has come, and processing ones whose lease ran out (their
   * worker died). While leased, `next_attempt_at` holds the lease expiry, so one index range finds both. PostgreSQL
   * skips rows another process is claiming; SQLite has one writer, so the statement is atomic on its own. Jobs for
   * `excludedTargets` (those whose slots are all taken in this process) are left for later.
   */
  async claim(
    owner: string,
    limit: number,
    now: Date,
    leaseMs: number,
    excludedTargets: readonly string[] = [],
  ): Promise<DeliveryJob[]> {
    const nowIso = now.toISOString();
    const until = new Date(now.getTime() + leaseMs).toISOString();
    let due = this.db
      .selectFrom('deliveries')
      .select('id')
      .where(UNFINISHED)
      .where('next_attempt_at', '<=', nowIso)
      .$if(excludedTargets.length > 0, (query) => query.where('target_id', 'not in', excludedTargets))
      .orderBy('next_attempt_at')
      .limit(limit);
    if (this.postgres) due = due.forUpdate().skipLocked();
    return this.session((db) =>
      db
        .with('due', () => due)
        .updateTable('deliveries')
        .set({
          status: 'processing',
          lease_owner: owner,
          lease_expires_at: until,
          next_attempt_at: until,
          updated_at: nowIso,
        })
        .where('id', 'in', (eb) => eb.selectFrom('due').select('id'))
        .returningAll()
        .execute(),
    );
  }

  /**
   * Pushes the leases of jobs still in flight forward. PostgreSQL: rows another transaction is writing are left alone
   * (an attempt's record finishing them, an erase deleting them): waiting for them while holding the others, the
   * renewal deadlocked with the attempts' batches, which lock their rows in another order.
   */
  async extendLeases(owner: string, ids: string[], now: Date, leaseMs: number): Promise<void> {
    if (ids.length === 0) return;
    const until = new Date(now.getTime() + leaseMs).toISOString();
    await this.session((db) => {
      let leased = db
        .selectFrom('deliveries')
        .select('id')
        .where('lease_owner', '=', owner)
        .where('status', '=', 'processing')
        .where('id', 'in', ids);
      if (this.postgres) leased = leased.forUpdate().skipLocked();
      return db
        .updateTable('deliveries')
        .set({ lease_expires_at: until, next_attempt_at: until })
        .where('id', 'in', leased)
        .execute();
    });
  }

  /** Gives unfinished jobs back (graceful shutdown), due at once for whichever worker comes next. */
  async release(owner: string, ids: string[], now: Date): Promise<void> {
    if (ids.length === 0) return;
    await this.session((db) =>
      db
        .updateTable('deliveries')
        .set({ status: 'pending', lease_owner: null, lease_expires_at: null, next_attempt_at: now.toISOString() })
        .where('lease_owner', '=', owner)
        .where('status', '=', 'processing')
        .where('id', 'in', ids)
        .execute(),
    );
  }

  /** The earliest time any job becomes due, or undefined when the outbox is idle. */
  async nextDueAt(): Promise<Date | undefined> {
    const row = await this.db
      .selectFrom('deliveries')
      .select((eb) => eb.fn.min('next_attempt_at').as('next'))
      .where(UNFINISHED)
      .executeTakeFirst();
    return row?.next ? new Date(row.next) : undefined;
  }

  /**
   * Records an attempt and moves its job on, fenced by its owner (the attempt is logged either way). Attempts finishing
   * within a few milliseconds of each other, or while the transactions allowed at once are committing, share one
   * transaction (one commit; on SQLite one WAL write, on PostgreSQL one statement per table, see recordAttempts). The
   * promise resolves once this one is committed, so the job stays leased (and its lease renewed) until then: a crash
   * before that only repeats the attempt, which at-least-once delivery allows. Resolves to false when the job was
   * erased with its email while the attempt was made: there is nothing left to record it on, and nothing is written
   * about mail that is gone.
   */
  async finishAttempt(finished: FinishedAttempt): Promise<boolean> {
    const outcome = await this.attempts.runBatched(finished, this.recordAttempts);
    if (!outcome.recorded) return false;
    this.eventsAppended();
    if (outcome.toldFailure) this.failures?.committed();
    return true;
  }

  /** One transaction's attempts; one function for all, so that the committer writes them together. */
  private readonly recordAttempts = (
    trx: Transaction<Database>,
    batch: readonly FinishedAttempt[],
  ): Promise<AttemptRecorded[]> => recordAttempts(trx, batch, this.failures);

  /** Ends a job without an attempt (its target is gone or switched off). */
  async abandon(job: DeliveryJob, owner: string, reason: string, now: Date): Promise<void> {
    await this.session((db) =>
      db.transaction().execute(async (trx) => {
        const ended = await trx
          .updateTable('deliveries')
          .set({
            status: 'failed',
            next_attempt_at: null,
            lease_owner: null,
            lease_expires_at: null,
            last_error: reason,
            updated_at: now.toISOString(),
          })
          .where('id', '=', job.id)
          .where('lease_owner', '=', owner)
          .executeTakeFirst();
        if (Number(ended.numUpdatedRows) === 0) return;
        await appendEvents(
          trx,
          [deliveryEvent(job, { attempt: null, success: false, statusCode: null, error: reason, nextAttemptAt: null })],
          now.toISOString(),
        );
      }),
    );
    this.eventsAppended();
  }

  /**
   * Unfinished jobs (pending or being attempted) and the queue time of the oldest, in one query: a job queued again
   * by hand waits from then, not from when it was first queued.
   */
  async queueState(): Promise<{ depth: number; oldestQueuedAt: Date | null }> {
    const row = await this.db
      .selectFrom('deliveries')
      .select((eb) => [eb.fn.countAll().as('depth'), eb.fn.min(eb.fn.coalesce('queued_at', 'created_at')).as('oldest')])
      .where(UNFINISHED)
      .executeTakeFirstOrThrow();
    return { depth: Number(row.depth), oldestQueuedAt: row.oldest ? new Date(row.oldest) : null };
  }

  /**
   * The forward recipients the job's attempts since its last success reached (sent, or skipped as sent before),
   * lower-cased, so a retry skips them. None when the latest succeeded: a finished job runs again only when resent,
   * to everyone.
   */
  async recipientsReached(deliveryId: string): Promise<string[]> {
    const rows = await this.db
      .selectFrom('delivery_attempts')
      .select(['recipients', 'success'])
      .where('delivery_id', '=', deliveryId)
      .orderBy('attempt', 'desc')
      .execute();
    const reached = new Set<string>();
    // Not the latest alone: a member left out of one attempt (removed from the group, then added back) was still
    // reached by an earlier one.
    for (const row of rows) {
      if (fromFlag(row.success)) break;
      for (const recipient of JSON.parse(row.recipients ?? '[]') as NonNullable<AttemptRecord['recipients']>) {
        if (recipient.status === 'sent' || recipient.status === 'skipped') reached.add(recipient.address.toLowerCase());
      }
    }
    return [...reached];
  }
}
