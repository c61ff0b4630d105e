import { sql } from 'kysely';
import type { Db } from './database.ts';
import type { Session } from './group-committer.ts';

/** The event loop's pauses between tries at SQLite's write lock, in ms; the last one repeats. */
const LOCK_RETRY_MS = [1, 1, 2, 5];

/** Whether `error` is SQLite's "database is locked" (SQLITE_BUSY or one of its extended codes). */
function isBusy(error: unknown): boolean {
  const code = (error as { errcode?: unknown } | null)?.errcode;
  return typeof code === 'number' && (code & 0xff) === 5;
}

/**
 * A Session for writes made from the event loop's SQLite connection that are safe to lose in a power cut (see the
 * caller). Each try runs on the connection held throughout, set to synchronous NORMAL (no WAL fsync at its commit)
 * and to a busy timeout of 0, both put back after. Meeting another connection's write lock (ingest's writer, the
 * CLI) fails at once, before anything was written, and the work is tried again after a timer, with the connection
 * let go meanwhile: SQLite's busy handler would wait with the event loop stopped, and give up after the busy timeout.
 * So `work` must be safe to run again after it failed with SQLITE_BUSY: a transaction (rolled back) or one statement.
 * It waits for as long as the lock is held.
 */
export function lockWaitingSession(db: Db): Session {
  let levels: { synchronous: number; busyTimeout: number } | undefined;
  return async (work) => {
    for (let tries = 0; ; tries++) {
      const outcome = await db.connection().execute(async (connection) => {
        if (!levels) {
          const synchronous = await sql<{ synchronous: number }>`PRAGMA main.synchronous`.execute(connection);
          const busyTimeout = await sql<{ timeout: number }>`PRAGMA busy_timeout`.execute(connection);
          levels = { synchronous: synchronous.rows[0]!.synchronous, busyTimeout: busyTimeout.rows[0]!.timeout };
        }
        await sql`PRAGMA main.synchronous = NORMAL`.execute(connection);
        await sql`PRAGMA busy_timeout = 0`.execute(connection);
        try {
          return { done: true as const, value: await work(connection) };
        } catch (error) {
          if (isBusy(error)) return { done: false as const };
          throw error;
        } finally {
          await sql.raw(`PRAGMA main.synchronous = ${levels.synchronous}`).execute(connection);
          await sql.raw(`PRAGMA busy_timeout = ${levels.busyTimeout}`).execute(connection);
        }
      });
      if (outcome.done) return outcome.value;
      await new Promise((resolve) => setTimeout(resolve, LOCK_RETRY_MS[Math.min(tries, LOCK_RETRY_MS.length - 1)]));
    }
  };
}
