export { serveRequests, WorkerLost, WorkerPool } from './worker-pool.ts';
