import { DatabaseSync } from 'node:sqlite';
import { workerData } from 'node:worker_threads';
import { listenForStop } from '../workers/index.ts';
import type { WalCheckpointThreadData } from './wal-checkpointer.ts';

/**
 * The checkpointer's thread: every interval, a PASSIVE checkpoint copies the pages committed since the last one from
 * the WAL into the database file. PASSIVE never waits for a reader or the writer, so nobody waits for it either.
 */
const { file, synchronous, intervalMs } = workerData as WalCheckpointThreadData;
const database = new DatabaseSync(file, { timeout: 5000 });
// The checkpoint's own syncs (the database file after copying) follow the installation's durability level.
database.exec(`PRAGMA synchronous = ${synchronous}`);
const checkpoint = database.prepare('PRAGMA wal_checkpoint(PASSIVE)');
const timer = setInterval(() => checkpoint.get(), intervalMs);

listenForStop(() => {
  clearInterval(timer);
  database.close();
});
