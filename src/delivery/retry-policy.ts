/**
 * When a failed attempt is tried again. The schedule follows Standard Webhooks' example: fast at first, then backing
 * off over about three days. Entry n is the wait after the (n+1)th failed attempt; `retryAttempts` beyond the list
 * reuse the last entry. Each wait gets +-20% jitter so a receiver coming back is not hit by every job at once.
 */
export const RETRY_SCHEDULE_SECONDS: readonly number[] = [
  5,
  5 * 60,
  30 * 60,
  2 * 3600,
  5 * 3600,
  10 * 3600,
  14 * 3600,
  20 * 3600,
  24 * 3600,
  24 * 3600,
];

/** Longest `Retry-After` honoured; a receiver asking for more waits this long. */
const MAX_RETRY_AFTER_SECONDS = 24 * 3600;

const JITTER = 0.2;

export interface RetryPolicy {
  /** Milliseconds to wait after the given failed attempt (1-based, counted since the job was last queued). */
  delayAfter(failedAttempt: number, retryAfterMs?: number): number;
}

/**
 * `scale` shrinks the schedule (0.001 turns 5 s into 5 ms) so tests run in seconds. A receiver's `Retry-After` is
 * not scaled: it is the receiver's own word about when it can take more, and it is honoured as given (up to a day).
 */
export function createRetryPolicy(scale: number, random: () => number = Math.random): RetryPolicy {
  return {
    delayAfter(failedAttempt, retryAfterMs) {
      if (retryAfterMs !== undefined) return Math.min(retryAfterMs, MAX_RETRY_AFTER_SECONDS * 1000);
      const index = Math.min(Math.max(failedAttempt, 1), RETRY_SCHEDULE_SECONDS.length) - 1;
      const base = RETRY_SCHEDULE_SECONDS[index]! * 1000 * scale;
      return Math.round(base * (1 - JITTER + 2 * JITTER * random()));
    },
  };
}

/**
 * `Retry-After` as milliseconds from `now`: either delay-seconds or an HTTP date. Anything else is ignored, and the
 * regular schedule applies.
 */
export function parseRetryAfter(value: string | undefined, now: Date): number | undefined {
  if (!value) return undefined;
  const trimmed = value.trim();
  if (/^\d+$/.test(trimmed)) return Number(trimmed) * 1000;
  const at = Date.parse(trimmed);
  if (Number.isNaN(at)) return undefined;
  return Math.max(0, at - now.getTime());
}
