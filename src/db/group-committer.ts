import type { Transaction } from 'kysely';
import type { Db } from './database.ts';
import { RolledBackAtCommit } from './pipelined-transactions.ts';
import type { Database } from './schema.ts';

type Work<T> = (trx: Transaction<Database>) => Promise<T>;

/** Writes several units' items in one go (e.g. one multi-row insert per table), returning each item's result in order. */
export type BatchWork<I, T> = (trx: Transaction<Database>, items: readonly I[]) => Promise<T[]>;

/** Runs `work` with a database handle, e.g. on one connection set up for it and put back after. */
export type Session = <T>(work: (db: Db) => Promise<T>) => Promise<T>;

interface Pending<T> {
  item: unknown;
  write: BatchWork<unknown, T>;
  resolve(value: T): void;
  reject(error: unknown): void;
}

/**
 * A transaction failed once its work was done, at COMMIT: it may have committed or not (a connection that broke
 * mid-COMMIT leaves no way to tell). Its rows may exist, so nothing they would refer to may be thrown away.
 */
export class CommitOutcomeUnknown extends Error {
  override name = 'CommitOutcomeUnknown';
}

/** Whether `error` is a CommitOutcomeUnknown, also one that crossed from another thread (where only its name is kept). */
export function isCommitOutcomeUnknown(error: unknown): boolean {
  return error instanceof Error && error.name === 'CommitOutcomeUnknown';
}

/**
 * Runs queued units of work in shared transactions: while the transactions allowed at once are committing, new
 * work waits, and the next ones share all of it. Each unit still commits atomically (its rows land together or not at all),
 * but N messages cost one commit (one WAL fsync on SQLite) instead of N. A unit that throws is retried on its own
 * so it cannot take the others down with it; a failed COMMIT is not retried, because the batch may have committed.
 */
export class GroupCommitter {
  private readonly session: Session;
  private readonly maxBatch: number;
  private queue: Pending<unknown>[] = [];
  private running = 0;
  private readonly concurrency: number;
  private idleWaiters: Array<() => void> = [];
  private gathering: NodeJS.Timeout | undefined;
  private readonly gatherMs: number;

  /**
   * `gatherMs`: how long an idle committer holds work for others to join; `session`: where each transaction runs
   * (by default on `db` itself).
   */
  constructor(db: Db, options: { maxBatch?: number; concurrency?: number; gatherMs?: number; session?: Session } = {}) {
    this.session = options.session ?? ((work) => work(db));
    this.gatherMs = options.gatherMs ?? 1;
    this.maxBatch = options.maxBatch ?? 200;
    this.concurrency = options.concurrency ?? 1;
  }

  /**
   * Queues `work` for the next commit. `othersComing` says more work is about to be queued (other messages are in
   * flight): only then is an idle committer worth holding for a moment, so that they share the commit.
   */
  run<T>(work: Work<T>, options: { othersComing?: boolean } = {}): Promise<T> {
    return this.runBatched(work as Work<unknown>, runEach, options) as Promise<T>;
  }

  /**
   * Queues `item` for the next commit, to be written by `write` together with the other items of that transaction
   * queued with the same `write` (consecutive in the queue). Alone when the batch failed and its units are retried.
   */
  runBatched<I, T>(item: I, write: BatchWork<I, T>, options: { othersComing?: boolean } = {}): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.queue.push({ item, write, resolve, reject } as Pending<unknown>);
      this.pump(options.othersComing ?? true);
    });
  }

  /** Resolves once nothing is queued or committing. */
  idle(): Promise<void> {
    if (this.running === 0 && this.queue.length === 0) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  private pump(gather: boolean) {
    if (gather && this.running === 0 && this.queue.length < this.maxBatch) {
      // Nothing is committing: give messages finishing at about the same time a moment to join this commit.
      if (!this.gathering) {
        this.gathering = setTimeout(() => {
          this.gathering = undefined;
          this.flush();
        }, this.gatherMs);
      }
      return;
    }
    clearTimeout(this.gathering);
    this.gathering = undefined;
    this.flush();
  }

  private flush() {
    while (this.running < this.concurrency && this.queue.length > 0) {
      // Units run one after another (run) take their share of what is queued, as if every transaction allowed at once
      // were free, also when only one is: one that took everything queued while the others were busy would make each
      // unit wait for all the others' statements. Batched items (runBatched) are written by a statement per table
      // whatever their number, so one transaction takes them all: each transaction costs the database more than an
      // item does. A committer's units are of one kind, so the first tells.
      const share = this.queue[0]!.write === runEach ? Math.ceil(this.queue.length / this.concurrency) : Infinity;
      const batch = this.queue.splice(0, Math.min(this.maxBatch, share));
      this.running++;
      this.commit(batch).finally(() => {
        this.running--;
        if (this.queue.length > 0) this.flush();
        else if (this.running === 0) for (const wake of this.idleWaiters.splice(0)) wake();
      });
    }
  }

  private async commit(batch: Pending<unknown>[]) {
    if (batch.length > 1) {
      try {
        const results = await this.transaction(async (trx) => {
          const out: unknown[] = [];
          for (let start = 0; start < batch.length; ) {
            const { write } = batch[start]!;
            let end = start + 1;
            while (end < batch.length && batch[end]!.write === write) end++;
            out.push(
              ...(await write(
                trx,
                batch.slice(start, end).map((pending) => pending.item),
              )),
            );
            start = end;
          }
          return out;
        });
        for (const [i, item] of batch.entries()) item.resolve(results[i]);
        return;
      } catch (error) {
        if (error instanceof CommitOutcomeUnknown) {
          for (const item of batch) item.reject(error);
          return;
        }
        // Otherwise a unit failed and the batch rolled back: find that unit by committing each one alone.
      }
    }
    for (const item of batch) {
      try {
        item.resolve((await this.transaction((trx) => item.write(trx, [item.item])))[0]);
      } catch (error) {
        item.reject(error);
      }
    }
  }

  /**
   * One transaction; an error after `work` returned came from the COMMIT and is reported as CommitOutcomeUnknown,
   * unless COMMIT said that a statement of `work` sent ahead of it failed: that is `work`'s error.
   */
  private async transaction<T>(work: Work<T>): Promise<T> {
    let committing = false;
    try {
      return await this.session((db) =>
        db.transaction().execute(async (trx) => {
          // The session may run this again after a try that failed (see lockWaitingSession).
          committing = false;
          const result = await work(trx);
          committing = true;
          return result;
        }),
      );
    } catch (error) {
      if (!committing) throw error;
      if (error instanceof RolledBackAtCommit) throw error.cause;
      throw new CommitOutcomeUnknown(`commit failed: ${error instanceof Error ? error.message : String(error)}`, {
        cause: error,
      });
    }
  }
}

/** Runs plain units of work one after another. */
async function runEach(trx: Transaction<Database>, works: readonly Work<unknown>[]): Promise<unknown[]> {
  const out: unknown[] = [];
  for (const work of works) out.push(await work(trx));
  return out;
}
