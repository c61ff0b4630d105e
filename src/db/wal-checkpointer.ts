import { Worker } from 'node:worker_threads';
import type { DatabaseConfig } from '../config/index.ts';
import type { Logger } from '../core/index.ts';

type SqliteConfig = Extract<DatabaseConfig, { kind: 'sqlite' }>;

export interface WalCheckpointThreadData {
  file: string;
  synchronous: SqliteConfig['synchronous'];
  intervalMs: number;
}

/** The checkpointer's thread name for the operating system (the ingest bench reports its CPU by it). */
export const WAL_CHECKPOINT_THREAD_NAME = 'db-checkpoint';

/**
 * A longer interval copies a page that many commits changed once instead of several times, so the thread's CPU per
 * message falls as it grows. In runs of the ingest bench (nodemailer client) that rotated 20, 50 and 100 ms (8, 6 and
 * 8 runs), the thread took 0.034, 0.025 and 0.019 ms per message at 50 connections (means), all three at the same
 * rate (medians 2,153, 2,151 and 2,177 msg/s), and p99 at 10 connections was lowest at 50 ms: medians 21.3, 18.9 and
 * 22.8 ms.
 */
const CHECKPOINT_INTERVAL_MS = 50;

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
  const worker = new Worker(new URL('./wal-checkpoint-thread.ts', import.meta.url), {
    name: WAL_CHECKPOINT_THREAD_NAME,
    workerData: {
      file: config.file,
      synchronous: config.synchronous,
      intervalMs: CHECKPOINT_INTERVAL_MS,
    } satisfies WalCheckpointThreadData,
  });
  const exited = new Promise<void>((resolve) => worker.once('exit', () => resolve()));
  worker.on('error', (error) => logger.warn({ err: error }, 'WAL checkpointer stopped; connections checkpoint alone'));
  // It never holds the process open (say, when start-up fails after it began): a checkpoint cut off at exit is one
  // SQLite recovers from, as the WAL stays valid.
  worker.unref();
  return {
    async stop() {
      // Held by the process until it has exited, or a process with nothing else left would end before stop() returns.
      worker.ref();
      worker.postMessage('stop');
      await exited;
    },
  };
}
