import type { Clock } from '../../src/core/index.ts';

/** A clock that runs with the real one, plus whatever the test has moved it forward by. */
export function movableClock() {
  let offsetMs = 0;
  return {
    now: () => new Date(Date.now() + offsetMs),
    /** Moves "now" forward by `days`. */
    advanceDays(days: number) {
      offsetMs += days * 86_400_000;
    },
    /** Moves "now" forward by `minutes`. */
    advanceMinutes(minutes: number) {
      offsetMs += minutes * 60_000;
    },
    /** Moves "now" forward by `seconds`. */
    advanceSeconds(seconds: number) {
      offsetMs += seconds * 1000;
    },
  } satisfies Clock & Record<string, unknown>;
}

/**
 * A clock that stands still until the test moves it, for exact answers about windows of time (rate limits). Only
 * for tests without deliveries: jobs are queued at the real time, and a stopped clock never reaches it.
 */
export function manualClock(startMs = Date.now()) {
  let nowMs = startMs;
  return {
    now: () => new Date(nowMs),
    /** Moves "now" forward by `seconds`. */
    advanceSeconds(seconds: number) {
      nowMs += seconds * 1000;
    },
  } satisfies Clock & Record<string, unknown>;
}
