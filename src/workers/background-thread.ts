import { parentPort, Worker } from 'node:worker_threads';
import { THREAD_READY } from './worker-pool.ts';

/**
 * A thread of its own for a chore of the database (WAL checkpoints, search indexing), named for the operating
 * system so that tools and the ingest bench can tell its CPU apart. Its young generation is kept small: V8 would size
 * it from the machine's memory, for garbage these chores hardly make (see docs/performance.md, Memory). It never
 * holds the process open (say, when start-up fails after it began), so what it does must be safe to cut off at exit;
 * `stop` posts it a message, which it answers by finishing and closing its port, and resolves once it has exited. A
 * thread posts `THREAD_READY` once it listens for that message; one stopped before is terminated at once rather than
 * waited for while it loads. Whatever else it posts goes to `onReport`.
 */
export function startBackgroundThread<Report>(
  module: URL,
  name: string,
  workerData: unknown,
  onReport: (report: Report) => void = () => {},
): { worker: Worker; stop(): Promise<void> } {
  const worker = new Worker(module, { name, workerData, resourceLimits: { maxYoungGenerationSizeMb: 6 } });
  const exited = new Promise<void>((resolve) => worker.once('exit', () => resolve()));
  let ready = false;
  worker.on('message', (message: Report | typeof THREAD_READY) => {
    if (message === THREAD_READY) ready = true;
    else onReport(message);
  });
  worker.unref();
  return {
    worker,
    async stop() {
      // Held by the process until it has exited, or a process with nothing else left would end before stop() returns.
      worker.ref();
      if (ready) worker.postMessage('stop');
      else await worker.terminate();
      await exited;
    },
  };
}

/**
 * The thread side of startBackgroundThread: when asked to stop, runs `onStop` and closes the port, which lets the
 * thread exit. Posts THREAD_READY, as the thread listens from then on.
 */
export function listenForStop(onStop: () => void | Promise<void>): void {
  const port = parentPort!;
  port.once('message', async () => {
    await onStop();
    port.close();
  });
  port.postMessage(THREAD_READY);
}
