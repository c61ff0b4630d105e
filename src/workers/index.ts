export { listenForStop, startBackgroundThread } from './background-thread.ts';
export { serveRequests, THREAD_READY, WorkerLost, WorkerPool } from './worker-pool.ts';
