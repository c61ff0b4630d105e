import { DatabaseSync } from 'node:sqlite';
import { isMainThread, parentPort, Worker, workerData } from 'node:worker_threads';

/**
 * Holds SQLite's write lock on `file` from another connection, on a thread of its own (so that whatever the test's
 * event loop does, the lock is held for `ms` and then let go). Resolves once the lock is taken, with a promise of
 * its release.
 */
export async function holdSqliteWriteLock(file: string, ms: number): Promise<{ released: Promise<void> }> {
  const worker = new Worker(new URL(import.meta.url), { workerData: { file, ms } });
  const released = new Promise<void>((resolve, reject) => {
    worker.once('error', reject);
    worker.once('exit', (code) => (code === 0 ? resolve() : reject(new Error(`lock holder exited with ${code}`))));
  });
  await new Promise<void>((resolve, reject) => {
    worker.once('message', () => resolve());
    released.catch(reject);
  });
  return { released };
}

if (!isMainThread && workerData?.file) {
  const { file, ms } = workerData as { file: string; ms: number };
  // Mailroom's own short writes (lease renewals, checkpoints) may hold the lock for a moment: wait for it as they do.
  const database = new DatabaseSync(file, { timeout: 5_000 });
  database.exec('BEGIN IMMEDIATE');
  parentPort!.postMessage('locked');
  // Sleeps this thread only, with the write lock held.
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
  database.exec('COMMIT');
  database.close();
}
