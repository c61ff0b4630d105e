/** How long one measure of the load lasts. */
const WINDOW_MS = 100;
/**
 * Messages waiting for their 250 on average over a window, at and above which ingest counts as saturated. One SMTP
 * connection never has more than one in flight; 10 connections sending as fast as they can keep about 8.
 */
const SATURATED_IN_FLIGHT = 4;

/**
 * How many messages ingest holds between the end of DATA and the reply, on average over the last window of time:
 * the number of senders waiting on Mailroom, whatever holds them up (CPU, the write lock, a commit).
 */
export class IngestLoad {
  #inFlight = 0;
  /** Messages in flight times milliseconds, since the window began. */
  #area = 0;
  #windowStart = performance.now();
  #changedAt = this.#windowStart;
  #lastMean = 0;

  get inFlight(): number {
    return this.#inFlight;
  }

  entered(): void {
    this.#advance();
    this.#inFlight++;
  }

  left(): void {
    this.#advance();
    this.#inFlight--;
  }

  /** Whether senders queue up: the last full window's mean in flight reached SATURATED_IN_FLIGHT. */
  saturated(): boolean {
    this.#advance();
    return this.#lastMean >= SATURATED_IN_FLIGHT;
  }

  #advance(): void {
    const now = performance.now();
    this.#area += this.#inFlight * (now - this.#changedAt);
    this.#changedAt = now;
    const elapsed = now - this.#windowStart;
    if (elapsed < WINDOW_MS) return;
    this.#lastMean = this.#area / elapsed;
    this.#area = 0;
    this.#windowStart = now;
  }
}
