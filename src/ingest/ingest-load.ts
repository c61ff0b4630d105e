/** How long one measure of the load lasts. */
const WINDOW_MS = 100;
/**
 * Messages waiting for their 250 on average over a window, at and above which ingest counts as saturated. One SMTP
 * connection never has more than one in flight; 10 connections sending as fast as they can keep about 8.
 */
const SATURATED_IN_FLIGHT = 4;
/**
 * A sender that begins a message within this long of its previous message's reply had it queued, and waits on
 * Mailroom rather than on the network: a round trip beyond the machine or its LAN takes longer.
 */
const QUEUED_SENDER_IDLE_MS = 2;
/**
 * Messages from queued senders in a window, at and above which, when they are at least half of its messages, ingest
 * counts as saturated: one connection sending as fast as Mailroom answers brings a few dozen, or a couple when
 * another process takes the cores.
 */
const SATURATED_QUEUED_MESSAGES = 2;
/**
 * How long ingest still counts as saturated after the last window with queued senders: a pause of theirs of a few
 * windows (a collection, the cores taken by another process) does not end their stream. Messages held up in flight
 * count for their window alone: a stall of ingest's own is over with it.
 */
const QUEUED_SENDERS_HOLD_MS = 300;

/**
 * Whether senders queue up for their 250, measured over the last window of time: by how many messages ingest holds
 * between the end of DATA and the reply on average (the senders waiting on Mailroom, whatever holds them up: CPU,
 * the write lock, a commit), or by how many began straight after their sender's previous reply.
 */
export class IngestLoad {
  #inFlight = 0;
  /** Messages in flight times milliseconds, since the window began. */
  #area = 0;
  #messages = 0;
  #queuedMessages = 0;
  #windowStart = performance.now();
  #changedAt = this.#windowStart;
  #lastMean = 0;
  /** When the last window with queued senders ended. */
  #queuedSendersAt = Number.NEGATIVE_INFINITY;

  get inFlight(): number {
    return this.#inFlight;
  }

  /** A message's DATA ended; `senderIdleMs` is how long its connection was idle before it (null for the first). */
  entered(senderIdleMs: number | null): void {
    this.#advance();
    this.#inFlight++;
    this.#messages++;
    if (senderIdleMs !== null && senderIdleMs < QUEUED_SENDER_IDLE_MS) this.#queuedMessages++;
  }

  left(): void {
    this.#advance();
    this.#inFlight--;
  }

  /**
   * Whether senders queue up: the last full window's mean in flight reached SATURATED_IN_FLIGHT, or a window that
   * ended within QUEUED_SENDERS_HOLD_MS had queued senders (see SATURATED_QUEUED_MESSAGES).
   */
  saturated(): boolean {
    this.#advance();
    return this.#lastMean >= SATURATED_IN_FLIGHT || this.#changedAt - this.#queuedSendersAt < QUEUED_SENDERS_HOLD_MS;
  }

  #advance(): void {
    const now = performance.now();
    this.#area += this.#inFlight * (now - this.#changedAt);
    this.#changedAt = now;
    const elapsed = now - this.#windowStart;
    if (elapsed < WINDOW_MS) return;
    this.#lastMean = this.#area / elapsed;
    if (this.#queuedMessages >= SATURATED_QUEUED_MESSAGES && 2 * this.#queuedMessages >= this.#messages) {
      this.#queuedSendersAt = now;
    }
    this.#area = 0;
    this.#messages = 0;
    this.#queuedMessages = 0;
    this.#windowStart = now;
  }
}
