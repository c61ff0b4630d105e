import { sql } from 'kysely';
import type { Clock, Logger } from '../core/index.ts';
import type { Db } from '../db/index.ts';

/** A difference from PostgreSQL's clock past this is logged: NTP keeps machines within milliseconds. */
const TOLERATED_SKEW_MS = 1_000;
const CHECK_INTERVAL_MS = 10 * 60_000;

/**
 * Leases and retry times are written by one process and read by others, each by its own clock: a process whose
 * clock runs ahead by more than a lease takes over jobs another is still sending (they are sent twice), and one
 * behind leaves a dead process's jobs waiting. PostgreSQL's clock is the one every process shares, so this compares
 * the process's clock with it at start and every 10 minutes, and warns while they differ by more than a second.
 */
export function watchClockSkew(options: { db: Db; clock: Clock; logger: Logger; leaseMs: number }) {
  const { db, clock, logger, leaseMs } = options;
  async function check(): Promise<void> {
    const sent = clock.now().getTime();
    const { rows } = await sql<{
      ms: number;
    }>`select extract(epoch from clock_timestamp())::float8 * 1000 as ms`.execute(db);
    const received = clock.now().getTime();
    const skewMs = (sent + received) / 2 - rows[0]!.ms;
    // Half the round trip is how far off the estimate may be.
    if (Math.abs(skewMs) - (received - sent) / 2 <= TOLERATED_SKEW_MS) return;
    const seconds = Math.abs(skewMs / 1000).toFixed(1);
    logger.warn(
      { skewMs: Math.round(skewMs), leaseMs },
      `this process's clock is ${seconds} s ${skewMs > 0 ? 'ahead of' : 'behind'} PostgreSQL's: deliveries' leases ` +
        'and retry times compare the clocks of every process, so synchronize them (NTP)',
    );
  }
  const run = () => {
    // An outage is said by everything else that reads the database.
    check().catch(() => {});
  };
  run();
  const timer = setInterval(run, CHECK_INTERVAL_MS).unref();
  return {
    stop() {
      clearInterval(timer);
    },
  };
}
