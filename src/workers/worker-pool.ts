import { parentPort, Worker } from 'node:worker_threads';

interface Pending<Reply> {
  resolve(reply: Reply): void;
  reject(error: Error): void;
}

interface PoolWorker<Reply> {
  worker: Worker;
  pending: Map<number, Pending<Reply>>;
  exited: Promise<void>;
  /** Whether the worker has loaded its module and listens for requests (see serveRequests). */
  ready: boolean;
}

type Envelope<T> = { id: number } & T;
/**
 * A handler's error as it crosses the thread: its message, its name and its system or driver codes, with its cause's,
 * so the caller can still tell kinds apart (a bug from an outage, see isOutage).
 */
interface CrossingError {
  message: string;
  name: string;
  code?: string;
  errcode?: number;
  cause?: CrossingError;
}
type ReplyEnvelope<Reply> = { id: number; reply?: Reply; error?: CrossingError };

/** What a worker thread posts once it listens for messages (see serveRequests and startBackgroundThread). */
export const THREAD_READY = 'ready';

/** How deep a chain of causes crosses; deeper ones are left out. */
const MAX_CAUSES = 3;

function toCrossing(error: unknown, depth = 0): CrossingError {
  const { message, name, code, errcode, cause } = (
    error instanceof Error ? error : new Error(String(error))
  ) as Error & {
    code?: unknown;
    errcode?: unknown;
  };
  return {
    message,
    name,
    ...(typeof code === 'string' ? { code } : {}),
    ...(typeof errcode === 'number' ? { errcode } : {}),
    ...(cause instanceof Error && depth < MAX_CAUSES ? { cause: toCrossing(cause, depth + 1) } : {}),
  };
}

function fromCrossing({ message, name, code, errcode, cause }: CrossingError): Error {
  const error = new Error(message, cause ? { cause: fromCrossing(cause) } : undefined);
  error.name = name;
  return Object.assign(error, code === undefined ? {} : { code }, errcode === undefined ? {} : { errcode });
}

/**
 * The worker died (or could not start) while the request was in its hands. Unlike a handler's error, this says
 * nothing about how far the request got: the worker may have finished its work, even committed it, before dying.
 */
export class WorkerLost extends Error {
  override name = 'WorkerLost';
}

/** A worker that shut down cleanly within this time is let go; one that did not is terminated. */
const CLOSE_GRACE_MS = 5000;
/** This many deaths within the window mean the workers cannot run at all (e.g. the database cannot be opened). */
const MAX_DEATHS = 5;
const DEATH_WINDOW_MS = 10_000;

/**
 * Worker threads running one module (see `serveRequests`), so that CPU-heavy or blocking work runs beside the event
 * loop that serves SMTP and HTTP instead of on it. Each request goes to the worker with the fewest requests in
 * progress. A worker that dies fails its requests (ingest answers them with a temporary error) and is replaced;
 * if workers keep dying, the pool stops replacing them and fails every request at once rather than loop.
 */
export class WorkerPool<Request, Reply> {
  private readonly workers: PoolWorker<Reply>[] = [];
  private readonly module: URL;
  private readonly workerData: unknown;
  private readonly threadName: string;
  private readonly youngGenerationMb: number;
  private idleWaiters: Array<() => void> = [];
  private nextId = 0;
  private closed = false;
  private deaths: number[] = [];
  private broken: Error | undefined;

  /**
   * `threadName` names the workers' threads for the operating system (at most 15 characters show), so that tools
   * like top -H and the ingest bench's per-thread CPU tell them apart. `youngGenerationMb` caps each worker's young
   * generation, which V8 would otherwise size from the machine's memory (see docs/performance.md, Memory).
   */
  constructor(module: URL, size: number, workerData: unknown, threadName: string, youngGenerationMb: number) {
    this.module = module;
    this.workerData = workerData;
    this.threadName = threadName;
    this.youngGenerationMb = youngGenerationMb;
    for (let i = 0; i < size; i++) this.workers.push(this.spawn());
  }

  request(request: Request): Promise<Reply> {
    if (this.closed) return Promise.reject(new Error('worker pool is closed'));
    if (this.broken) return Promise.reject(this.broken);
    const target = this.workers.reduce((best, candidate) =>
      candidate.pending.size < best.pending.size ? candidate : best,
    );
    const id = this.nextId++;
    return new Promise<Reply>((resolve, reject) => {
      target.pending.set(id, { resolve, reject });
      target.worker.postMessage({ id, ...request });
    });
  }

  /** Resolves once no request is in progress. */
  idle(): Promise<void> {
    if (this.inProgress() === 0) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  /**
   * Asks every worker to finish (its `onClose` runs), and terminates one that has not after a grace period. A worker
   * still loading its module, which was never given a request, has nothing to finish and is terminated at once,
   * rather than asked once it has loaded.
   */
  async close(): Promise<void> {
    this.closed = true;
    await Promise.all(
      this.workers.map(async ({ worker, exited, ready, pending }) => {
        if (!ready && pending.size === 0) {
          await worker.terminate();
          return;
        }
        worker.postMessage({ close: true });
        const grace = setTimeout(() => worker.terminate(), CLOSE_GRACE_MS);
        await exited;
        clearTimeout(grace);
      }),
    );
  }

  private inProgress(): number {
    return this.workers.reduce((sum, entry) => sum + entry.pending.size, 0);
  }

  private settled() {
    if (this.inProgress() === 0) for (const wake of this.idleWaiters.splice(0)) wake();
  }

  private spawn(): PoolWorker<Reply> {
    const worker = new Worker(this.module, {
      workerData: this.workerData,
      name: this.threadName,
      resourceLimits: { maxYoungGenerationSizeMb: this.youngGenerationMb },
    });
    const exited = new Promise<void>((resolve) => worker.once('exit', () => resolve()));
    const entry: PoolWorker<Reply> = { worker, pending: new Map(), exited, ready: false };
    worker.on('message', (message: ReplyEnvelope<Reply> | typeof THREAD_READY) => {
      if (message === THREAD_READY) {
        entry.ready = true;
        return;
      }
      const pending = entry.pending.get(message.id);
      if (!pending) return;
      entry.pending.delete(message.id);
      if (message.error !== undefined) pending.reject(fromCrossing(message.error));
      else pending.resolve(message.reply!);
      this.settled();
    });
    let failed = false;
    const fail = (error: Error) => {
      if (failed) return;
      failed = true;
      for (const pending of entry.pending.values()) pending.reject(error);
      entry.pending.clear();
      const now = Date.now();
      this.deaths = [...this.deaths.filter((at) => now - at < DEATH_WINDOW_MS), now];
      if (this.deaths.length >= MAX_DEATHS) this.broken ??= new Error(`worker keeps failing: ${error.message}`);
      const index = this.workers.indexOf(entry);
      if (index >= 0 && !this.closed && !this.broken) this.workers[index] = this.spawn();
      this.settled();
    };
    worker.on('error', (error: Error) => fail(new WorkerLost(error.message, { cause: error })));
    worker.on('exit', (code) => {
      if (!this.closed) fail(new WorkerLost(`${this.module.pathname} worker exited with code ${code}`));
    });
    worker.unref();
    return entry;
  }
}

/**
 * The worker side of a `WorkerPool`: answers each request with `handle`'s result (or its error, see CrossingError).
 * On the pool's close, runs `onClose` and stops listening, which lets the thread exit.
 */
export function serveRequests<Request, Reply>(
  handle: (request: Request) => Promise<Reply>,
  onClose: () => Promise<void> = async () => {},
): void {
  const port = parentPort!;
  port.on('message', async (message: Envelope<Request> | { close: true }) => {
    if ('close' in message) {
      await onClose();
      port.close();
      return;
    }
    const { id, ...request } = message;
    try {
      port.postMessage({ id, reply: await handle(request as Request) } satisfies ReplyEnvelope<Reply>);
    } catch (error) {
      port.postMessage({ id, error: toCrossing(error) } satisfies ReplyEnvelope<Reply>);
    }
  });
  port.postMessage(THREAD_READY);
}
