import { Worker } from 'node:worker_threads';
import type { ParsedMessage } from './message-parser.ts';
import type { Verdicts } from './verdicts.ts';

export interface AnalysisRequest {
  /** The message as the client sent it: `length` bytes at `offset` of `buffer`. */
  buffer: SharedArrayBuffer;
  offset: number;
  length: number;
  clientIp: string;
  helo: string;
  mailFrom: string;
}

export interface Analysis {
  parsed: ParsedMessage;
  verdicts: Verdicts;
}

interface Pending {
  resolve(analysis: Analysis): void;
  reject(error: Error): void;
}

interface PoolWorker {
  worker: Worker;
  pending: Map<number, Pending>;
}

/**
 * A few worker threads that parse messages and compute their verdicts, so that this CPU work runs beside the event
 * loop instead of on it. Each request goes to the worker with the fewest requests in progress; a worker that dies
 * fails its requests (ingest answers them with a temporary error) and is replaced.
 */
export class AnalysisPool {
  private readonly workers: PoolWorker[] = [];
  private readonly options: { dnsServers: string[]; mxHost: string };
  private nextId = 0;
  private closed = false;

  constructor(size: number, options: { dnsServers: string[]; mxHost: string }) {
    this.options = options;
    for (let i = 0; i < size; i++) this.workers.push(this.spawn());
  }

  analyze(request: AnalysisRequest): Promise<Analysis> {
    const target = this.workers.reduce((best, candidate) =>
      candidate.pending.size < best.pending.size ? candidate : best,
    );
    const id = this.nextId++;
    return new Promise<Analysis>((resolve, reject) => {
      target.pending.set(id, { resolve, reject });
      target.worker.postMessage({ id, ...request });
    });
  }

  async close(): Promise<void> {
    this.closed = true;
    await Promise.all(this.workers.map((entry) => entry.worker.terminate()));
  }

  private spawn(): PoolWorker {
    const worker = new Worker(new URL('./analysis-worker.ts', import.meta.url), { workerData: this.options });
    const entry: PoolWorker = { worker, pending: new Map() };
    worker.on('message', (reply: { id: number; error?: string } & Partial<Analysis>) => {
      const pending = entry.pending.get(reply.id);
      if (!pending) return;
      entry.pending.delete(reply.id);
      if (reply.error !== undefined) pending.reject(new Error(reply.error));
      else pending.resolve({ parsed: reply.parsed!, verdicts: reply.verdicts! });
    });
    const fail = (error: Error) => {
      for (const pending of entry.pending.values()) pending.reject(error);
      entry.pending.clear();
      const index = this.workers.indexOf(entry);
      if (index >= 0 && !this.closed) this.workers[index] = this.spawn();
    };
    worker.on('error', fail);
    worker.on('exit', (code) => {
      if (!this.closed) fail(new Error(`analysis worker exited with code ${code}`));
    });
    worker.unref();
    return entry;
  }
}
