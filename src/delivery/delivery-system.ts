import type { Clock, Logger } from '../core/index.ts';
import { announceCommits, type Db, listenForNotifications } from '../db/index.ts';
import type { DnsLookup } from '../dns/index.ts';
import { DeliveryTargets } from '../endpoints/index.ts';
import type { HtmlCleaner } from '../mail/index.ts';
import { watchClockSkew } from './clock-skew.ts';
import type { JobLease, RunnableJob } from './delivery-jobs.ts';
import { DeliveryService } from './delivery-service.ts';
import { DeliveryWorker } from './delivery-worker.ts';
import { createForwarder } from './forwarder.ts';
import { type AddressGuard, createHttpSender } from './http-sender.ts';
import { type DeliveryObserver, JobRunner } from './job-runner.ts';
import { type DeliveryFailureObserver, OutboxStore } from './outbox-store.ts';
import { createRetryPolicy } from './retry-policy.ts';

export interface DeliverySystemOptions {
  db: Db;
  /** PostgreSQL adds SKIP LOCKED claims and LISTEN/NOTIFY between processes. */
  database: { kind: 'sqlite' } | { kind: 'postgres'; url: string; schema: string; poolSize: number };
  clock: Clock;
  logger: Logger;
  dns: DnsLookup;
  /** The SSRF rule, applied to every address a webhook or a direct forward connects to. */
  guard: AddressGuard;
  /** The stored raw message; throws a NotFound when the store no longer has it whole. */
  readRaw(key: string): Promise<Buffer>;
  /** Sanitizes a claimed job's HTML, off the event loop. */
  cleaner: Pick<HtmlCleaner, 'clean'>;
  /** Called after a commit that appended delivery events, to wake this process's event streams. */
  eventsAppended(): void;
  /** Told of each delivery that ends failed, in the transaction that records it (health alerts). */
  failures?: DeliveryFailureObserver;
  /** Told of every recorded attempt (the metrics). */
  observer?: DeliveryObserver;
  /** Whether senders queue up for their 250 in this process: the worker then yields to ingest (`yieldMs`). */
  ingestSaturated(): boolean;
  settings: {
    /** The attachments' `downloadUrl`, with `{emailId}` and `{index}` to fill in. */
    attachmentUrl: string;
    /** Name used in EHLO when forwarding. */
    hostname: string;
    relayUrl?: string;
    mxPort: number;
    concurrency: number;
    concurrencyPerTarget: number;
    retryScale: number;
    leaseMs: number;
    pollMs: number;
    /** How long jobs may be left pending while ingest is saturated; 0 never leaves them. */
    yieldMs: number;
  };
}

/**
 * Attempt transactions at once on PostgreSQL, at most half the pool (claims, the attempts' reads and the API keep
 * connections): with two, one gathers finished attempts while the other commits, as ingest's writer does.
 */
const POSTGRES_ATTEMPT_TRANSACTIONS = 2;
/** Fresh jobs that may wait in memory per delivery slot, each with its email (see DeliveryWorker.newJobLease). */
const MAX_WAITING_PER_SLOT = 32;
/** A fresh job keeps its raw message while it waits only up to this size; a larger one is read back when it runs. */
const MAX_RAW_HELD_BYTES = 64 * 1024;

/**
 * Delivery as a whole: the worker that runs the outbox in this process, the operations service, and `jobsQueued`,
 * which whoever commits new jobs calls afterwards to wake the workers here and, on PostgreSQL, in other processes.
 * Ingest inserts its jobs with `newJobLease()` and hands them over with `jobsCommitted`, so that this process's
 * worker runs them without claiming them.
 */
export function createDeliverySystem(options: DeliverySystemOptions) {
  const { db, clock, logger, settings } = options;
  const now = () => clock.now();
  // Every delivery slot waiting for its attempt's commit is as large as a batch gets.
  const store = new OutboxStore(db, {
    kind: options.database.kind,
    maxAttemptsBatch: settings.concurrency,
    attemptTransactions:
      options.database.kind === 'postgres'
        ? Math.min(POSTGRES_ATTEMPT_TRANSACTIONS, Math.max(1, Math.floor(options.database.poolSize / 2)))
        : 1,
    eventsAppended: options.eventsAppended,
    failures: options.failures,
  });
  const targets = new DeliveryTargets(db, clock);
  const http = createHttpSender(options.guard, options.dns);
  const forwarder = createForwarder({
    relayUrl: settings.relayUrl,
    dns: options.dns,
    mxPort: settings.mxPort,
    hostname: settings.hostname,
    guard: options.guard,
    readRaw: options.readRaw,
  });
  const runner = new JobRunner({
    db,
    store,
    targets,
    http,
    forwarder,
    policy: createRetryPolicy(settings.retryScale),
    attachmentUrl: settings.attachmentUrl,
    logger,
    now,
    observer: options.observer,
    cleaner: options.cleaner,
    readRaw: options.readRaw,
  });
  const worker = new DeliveryWorker({
    store,
    runner,
    logger,
    now,
    settings: {
      concurrency: settings.concurrency,
      concurrencyPerTarget: settings.concurrencyPerTarget,
      maxWaiting: MAX_WAITING_PER_SLOT * settings.concurrency,
      leaseMs: settings.leaseMs,
      pollMs: settings.pollMs,
      drainMs: Math.min(settings.leaseMs, 10_000),
      yieldMs: settings.yieldMs,
    },
    ingestSaturated: options.ingestSaturated,
    handedBack: jobsQueued,
  });
  // With the NOTIFY channel of this installation (one schema) on the PostgreSQL server.
  const pg =
    options.database.kind === 'postgres'
      ? { ...options.database, channel: `mailroom_deliveries_${options.database.schema}` }
      : undefined;
  let listener: ReturnType<typeof listenForNotifications> | undefined;
  let clockSkew: ReturnType<typeof watchClockSkew> | undefined;

  const announcer = pg
    ? announceCommits({ db, channel: pg.channel, self: worker.owner, purpose: 'delivery wake-up', logger })
    : undefined;
  /** Wakes this process's worker now, and other processes' soon after (announceCommits). */
  function jobsQueued(): void {
    worker.wake();
    announcer?.announce();
  }

  /**
   * Jobs just committed: those leased to this worker it runs; pending ones are queued for any worker. A job keeps a
   * copy of its raw message: what ingest hands over are views of SMTP's buffers, which later mail reuses once this
   * returns, while a job may wait for a slot.
   */
  function jobsCommitted(jobs: readonly RunnableJob[]): void {
    const copies = new Map<readonly Buffer[], Buffer[]>();
    const copyOf = (raw: readonly Buffer[]) => {
      const copy = copies.get(raw) ?? [Buffer.concat(raw)];
      copies.set(raw, copy);
      return copy;
    };
    const leased = jobs
      .filter(({ job }) => job.lease_owner === worker.owner)
      .map(({ raw, ...runnable }) =>
        raw && (runnable.email?.rawSize ?? Number.POSITIVE_INFINITY) <= MAX_RAW_HELD_BYTES
          ? { ...runnable, raw: copyOf(raw) }
          : runnable,
      );
    if (leased.length > 0) worker.take(leased);
    if (leased.length < jobs.length) jobsQueued();
  }

  const service = new DeliveryService({
    db,
    clock,
    targets,
    http,
    forwarder,
    settings: { attachmentUrl: settings.attachmentUrl },
    jobsQueued,
  });

  return {
    service,
    worker,
    jobsQueued,
    newJobLease: (): JobLease | undefined => worker.newJobLease(),
    jobsCommitted,
    /** The unfinished jobs of the installation and when the oldest was queued, in one query (for the metrics). */
    queueState: () => store.queueState(),
    async start(): Promise<void> {
      if (pg) {
        listener = listenForNotifications({
          url: pg.url,
          channel: pg.channel,
          purpose: 'delivery wake-up',
          self: worker.owner,
          logger,
          onNotify: () => worker.wake(),
        });
        await listener.ready;
        clockSkew = watchClockSkew({ db, clock, logger, leaseMs: settings.leaseMs });
      }
      worker.start();
    },
    async stop(): Promise<void> {
      clockSkew?.stop();
      announcer?.close();
      await listener?.close();
      await worker.stop();
      http.close();
      forwarder.close();
    },
  };
}

export type DeliverySystem = ReturnType<typeof createDeliverySystem>;
