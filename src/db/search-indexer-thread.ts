import { parentPort, workerData } from 'node:worker_threads';
import { openDatabase } from './database.ts';
import { indexQueuedEmails } from './search-index.ts';
import type { SearchIndexerThreadData } from './search-indexer.ts';

/** The indexer's thread: every poll, applies the queue slice by slice until it is empty. */
const { database, pollMs } = workerData as SearchIndexerThreadData;
const handle = await openDatabase(database, { search: true });
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
