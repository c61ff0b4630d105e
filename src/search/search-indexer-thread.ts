import { setPriority } from 'node:os';
import { parentPort, workerData } from 'node:worker_threads';
import { openDatabase } from '../db/index.ts';
import type { SearchIndexerThreadData } from './search-indexer.ts';
import { attachSearchDatabase, indexQueuedEmails } from './sqlite-search-index.ts';

/** The indexer's thread: every poll, applies the queue slice by slice until it is empty. */
const { database, pollMs } = workerData as SearchIndexerThreadData;

/**
 * Indexing is a chore that may lag (a search applies what is still queued), so the indexer's thread gives way to the
 * threads that answer SMTP and HTTP whenever they want the CPU: on 2 cores, at 10 connections, p99 from end of DATA
 * to 250 was lower in 22 of 30 interleaved pairs (medians 1-2 ms lower), and at 50 connections more messages/s in 4
 * of 4, while the indexer still kept up (at most about 100 emails queued at the end of a run). On Linux a thread's
 * nice value is its own; elsewhere it would be the whole process's, so it is left alone there. Raising it needs no
 * privilege, but should it fail, that costs only the priority, never the indexing.
 */
const INDEXER_NICE = 10;
if (process.platform === 'linux') {
  try {
    setPriority(INDEXER_NICE);
  } catch {}
}
const handle = await openDatabase(database, { attach: attachSearchDatabase });
let stopping = false;
let timer: NodeJS.Timeout | undefined;
let draining: Promise<void> = Promise.resolve();

async function drain() {
  try {
    while (!stopping && (await indexQueuedEmails(handle.db))) {}
  } catch (error) {
    parentPort!.postMessage({ error: error instanceof Error ? error.message : String(error) });
  }
  if (!stopping) timer = setTimeout(() => (draining = drain()), pollMs);
}
draining = drain();

parentPort!.once('message', async () => {
  stopping = true;
  clearTimeout(timer);
  await draining;
  await handle.close();
  parentPort!.close();
});
