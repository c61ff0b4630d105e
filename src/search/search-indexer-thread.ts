import { setPriority } from 'node:os';
import { parentPort, workerData } from 'node:worker_threads';
import { openDatabase } from '../db/index.ts';
import { listenForStop } from '../workers/index.ts';
import type { SearchIndexerThreadData } from './search-indexer.ts';
import { attachSearchDatabase, indexQueuedEmails } from './sqlite-search-index.ts';

/** The indexer's thread: every poll, applies the queue slice by slice until it is empty. */
const { database, pollMs } = workerData as SearchIndexerThreadData;

/**
 * Indexing is a chore that may lag (a search applies what is still queued), so the indexer's thread gives way to the
 * threads that answer SMTP and HTTP whenever they want the CPU, which keeps their latency lower while the indexer
 * still keeps up. On Linux a thread's nice value is its own; elsewhere it would be the whole process's, so it is
 * left alone there. Raising it needs no privilege, but should it fail, that costs only the priority, never the
 * indexing.
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

listenForStop(async () => {
  stopping = true;
  clearTimeout(timer);
  await draining;
  await handle.close();
});
