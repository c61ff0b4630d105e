import type { Logger } from '../core/index.ts';
import type { FinishedAttempt, OutboxStore } from './outbox-store.ts';

/** How long a finished attempt waits for others to share its commit, at most. */
const GATHER_MS = 5;

/**
 * Records finished attempts in shared transactions. A commit per attempt put two commits per delivery (with the
 * claim) on the event loop's connection; on SQLite each one blocks the event loop for its fsync and contends with
 * ingest's writer for the one write lock. Attempts finishing within a few milliseconds of each other are recorded
 * together, at once when `maxBatch` are waiting (every delivery slot is). `record` resolves once the attempt is
 * committed, so the job stays leased (and its lease renewed) until then: a crash before the commit only means the
 * attempt is made again, which at-least-once delivery allows.
 */
export class AttemptRecorder {
  private readonly store: OutboxStore;
  private readonly logger: Logger;
  private readonly maxBatch: number;
  private queue: Array<{ finished: FinishedAttempt; resolve(): void; reject(error: unknown): void }> = [];
  private gathering: NodeJS.Timeout | undefined;
  private writing = false;

  constructor(store: OutboxStore, logger: Logger, maxBatch: number) {
    this.store = store;
    this.logger = logger;
    this.maxBatch = Math.max(1, maxBatch);
  }

  record(finished: FinishedAttempt): Promise<void> {
    return new Promise((resolve, reject) => {
      this.queue.push({ finished, resolve, reject });
      this.schedule();
    });
  }

  private schedule(): void {
    if (this.writing) return;
    if (this.queue.length >= this.maxBatch) {
      clearTimeout(this.gathering);
      this.gathering = undefined;
      void this.write();
    } else this.gathering ??= setTimeout(() => void this.write(), GATHER_MS);
  }

  private async write(): Promise<void> {
    this.gathering = undefined;
    this.writing = true;
    const batch = this.queue.splice(0, this.maxBatch);
    try {
      await this.store.finishAttempts(batch.map((entry) => entry.finished));
      for (const entry of batch) entry.resolve();
    } catch (error) {
      if (batch.length === 1) batch[0]!.reject(error);
      else {
        // One attempt's row may be what failed: record each alone, so that it does not fail the others.
        this.logger.warn({ err: error }, 'recording attempts together failed; recording them one at a time');
        for (const entry of batch) await this.store.finishAttempts([entry.finished]).then(entry.resolve, entry.reject);
      }
    } finally {
      this.writing = false;
      if (this.queue.length > 0) this.schedule();
    }
  }
}
