/**
 * When the delivery worker leaves the CPU to ingest: while senders queue up for their 250, new jobs are inserted
 * pending and none is claimed, so that mail is accepted as fast as without deliveries, and the jobs run once the burst
 * is over. The oldest job left so waits at most `limitMs`: then the worker claims as usual until it has caught up,
 * sharing the CPU with ingest, before it may yield again.
 */
export class IngestYield {
  readonly #saturated: () => boolean;
  readonly #limitMs: number;
  /** Since when, on `performance.now()`'s clock, jobs may have been left pending for ingest. */
  #since: number | undefined;

  /** `saturated` tells whether senders queue up for their 250; a `limitMs` of 0 never yields. */
  constructor(saturated: () => boolean, limitMs: number) {
    this.#saturated = saturated;
    this.#limitMs = limitMs;
  }

  /** Whether to leave jobs pending now. */
  now(): boolean {
    if (this.#limitMs === 0 || !this.#saturated()) return false;
    const now = performance.now();
    this.#since ??= now;
    return now - this.#since < this.#limitMs;
  }

  /** Whether jobs may have been left pending since the worker last caught up. */
  get begun(): boolean {
    return this.#since !== undefined;
  }

  /** No job left pending is due any more. */
  caughtUp(): void {
    this.#since = undefined;
  }
}
