import type { Logger } from '../core/index.ts';
import { startBackgroundThread } from '../workers/index.ts';
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
 * file less often; it must stay short enough that the WAL never reaches the 8,192 pages at which a commit would
 * checkpoint itself (docs/performance.md has how far it gets at full ingest).
 */
const CHECKPOINT_INTERVAL_MS = 150;

/**
 * Copies committed pages from SQLite's WAL into the database file from a thread and connection of its own. Left to
 * SQLite, the connection whose commit takes the WAL past its limit does that copy and fsyncs the database file inside
 * that COMMIT, so the messages of that commit and every one queued behind it wait for work that is not theirs.
 * The WAL restarts from its beginning only when a write
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
