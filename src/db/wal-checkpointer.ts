import type { Logger } from '../core/index.ts';
import { startBackgroundThread } from './background-thread.ts';
import type { SqliteConfig } from './database.ts';

export interface WalCheckpointThreadData {
  file: string;
  synchronous: SqliteConfig['synchronous'];
  intervalMs: number;
}

/** The checkpointer's thread name for the operating system (the ingest bench reports its CPU by it). */
export const WAL_CHECKPOINT_THREAD_NAME = 'db-checkpoint';

/**
 * A longer interval copies a page that many commits changed once instead of several times, and syncs the database
 * file less often, so the thread's CPU per message falls as it grows. On one machine, rotated runs of the ingest
 * bench (nodemailer client) at 20, 50 and 100 ms gave 0.034, 0.025 and 0.019 ms per message at 50 connections at the
 * same rate, and p99 at 10 connections was lowest at 50 ms (medians 21.3, 18.9 and 22.8 ms). On another, in
 * interleaved pairs of 150 ms against 50 ms: at 50 connections 1,211-1,237 messages/s against 1,151-1,222, p99 65-70
 * ms against 80-84, and 0.026 ms per message against 0.038-0.039 (3 pairs); at 10 connections as much or more
 * throughput and p99 26.8-30.0 ms against 24.3-33.0 (5 pairs). At 150 ms the WAL holds about 2,400 frames between
 * checkpoints at 1,600 messages/s, well under the 8,192 at which a commit would checkpoint itself.
 */
const CHECKPOINT_INTERVAL_MS = 150;

/**
 * Copies committed pages from SQLite's WAL into the database file from a thread and connection of its own. Left to
 * SQLite, the connection whose commit takes the WAL past its limit does that copy and fsyncs the database file inside
 * that COMMIT, so the messages of that commit and every one queued behind it wait 5-15 ms for work that is not theirs.
 * With this thread, in 9 interleaved pairs of the ingest bench: p99 at 10 connections 22.4 ms against 23.4 (medians),
 * and 1,626 messages/s at 50 connections against 1,574. The WAL restarts from its beginning only when a write
 * transaction begins with every frame copied, which under steady load is seldom, so connections keep a limit of their
 * own (see openDatabase): past it the committing connection copies what is left, usually little, and the WAL restarts.
 */
export function startWalCheckpointer(config: SqliteConfig, logger: Logger): { stop(): Promise<void> } {
  // A checkpoint cut off at exit is one SQLite recovers from, as the WAL stays valid.
  const thread = startBackgroundThread(
    new URL('./wal-checkpoint-thread.ts', import.meta.url),
    WAL_CHECKPOINT_THREAD_NAME,
    {
      file: config.file,
      synchronous: config.synchronous,
      intervalMs: CHECKPOINT_INTERVAL_MS,
    } satisfies WalCheckpointThreadData,
  );
  thread.worker.on('error', (error) =>
    logger.warn({ err: error }, 'WAL checkpointer stopped; connections checkpoint alone'),
  );
  return thread;
}
