import type { Clock } from './clock.ts';

/** What one `hit` found: whether it fits the limit, and when the key's window ends. */
export interface RateLimitAnswer {
  /** The hits counted in the key's window, this one included. */
  count: number;
  /** True while `count` is within the limit. */
  allowed: boolean;
  /** True for the one hit that first took the window over the limit (once per window). */
  crossed: boolean;
  windowStartedAt: Date;
  windowEndsAt: Date;
  /** Whole seconds until the window ends (at least 1): a `Retry-After`. */
  retryAfterSeconds: number;
}

/**
 * Counts hits per key in fixed windows that start at a key's first hit. The state is this process's memory: a map of
 * the keys seen in the last window or two, swept of ended windows once per window.
 */
export class FixedWindowRateLimiter {
  readonly limit: number;
  readonly windowMs: number;
  private readonly clock: Clock;
  private readonly windows = new Map<string, { startMs: number; count: number }>();
  private lastSweepMs = 0;

  constructor(options: { limit: number; windowMs: number; clock: Clock }) {
    this.limit = options.limit;
    this.windowMs = options.windowMs;
    this.clock = options.clock;
  }

  /** Counts `amount` hits for `key` now. */
  hit(key: string, amount = 1): RateLimitAnswer {
    const nowMs = this.clock.now().getTime();
    this.sweep(nowMs);
    let window = this.windows.get(key);
    if (!window || nowMs >= window.startMs + this.windowMs) {
      window = { startMs: nowMs, count: 0 };
      this.windows.set(key, window);
    }
    const before = window.count;
    window.count += amount;
    const endsMs = window.startMs + this.windowMs;
    return {
      count: window.count,
      allowed: window.count <= this.limit,
      crossed: before <= this.limit && window.count > this.limit,
      windowStartedAt: new Date(window.startMs),
      windowEndsAt: new Date(endsMs),
      retryAfterSeconds: Math.max(1, Math.ceil((endsMs - nowMs) / 1000)),
    };
  }

  private sweep(nowMs: number): void {
    if (nowMs - this.lastSweepMs < this.windowMs) return;
    this.lastSweepMs = nowMs;
    for (const [key, window] of this.windows) {
      if (nowMs >= window.startMs + this.windowMs) this.windows.delete(key);
    }
  }
}
