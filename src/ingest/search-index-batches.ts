import { indexPendingEmails } from '../db/index.ts';
import type { GroupCommitter } from './group-committer.ts';

/**
 * How far SQLite's search index may fall behind ingest's writes: this many stored emails, or this long after the
 * first of them. A search never sees the lag (it indexes what is queued first, see search-index.ts); the bounds
 * keep that work small, and keep each batch short for the messages whose commit it shares. In a writer
 * micro-benchmark (10 KB messages, 15 a commit) a batch every 32, 64, 128 or 256 emails saved the same CPU, and
 * indexing 64 took 2.5 ms (the median), 256 took 10 ms.
 */
const BATCH_EMAILS = 64;
const BATCH_DELAY_MS = 100;

/**
 * Indexes the emails ingest stored, a batch at a time (see search-index.ts for why), in the writer's own group
 * commits: a batch shares the next transaction with whatever messages are queued for it.
 *
 * While a batch runs, the writer commits nothing, and every message in flight waits for it: at 10 connections these
 * pauses (6-12 ms each on a slow 2-core guest, one every 64 messages) are where the slowest 1% of messages come from.
 * With indexing switched off, p99 at 10 connections was lower in 6 of 6 interleaved pairs (19-26 against 24-39 ms).
 * Indexing 16 emails at a time whenever the writer was idle did not lower it (8 pairs), and cost the writer about 10%
 * more CPU: small batches cost more per email, and a message still arrives during most of them. Only an index the
 * writer does not have to lock (a database file of its own, built by another thread) would take these pauses away.
 */
export class SearchIndexBatches {
  readonly #committer: GroupCommitter;
  #stored = 0;
  #timer: NodeJS.Timeout | undefined;
  #closed = false;

  constructor(committer: GroupCommitter) {
    this.#committer = committer;
  }

  /** Counts emails that were just stored, and so queued for the index; indexes the batch once it is due. */
  stored(count: number): void {
    if (count === 0 || this.#closed) return;
    this.#stored += count;
    if (this.#stored >= BATCH_EMAILS) void this.flush();
    else this.#timer ??= setTimeout(() => this.flush(), BATCH_DELAY_MS);
  }

  /**
   * Indexes everything queued, also what an earlier run left queued. A failure leaves the emails queued, for the next
   * batch or the next search.
   */
  async flush(): Promise<void> {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#stored = 0;
    await this.#committer.run((trx) => indexPendingEmails(trx), { othersComing: false }).catch(() => {});
  }

  /** Stops scheduling batches and indexes what is queued (the writer is closing, its last messages committed). */
  async close(): Promise<void> {
    this.#closed = true;
    await this.flush();
  }
}
