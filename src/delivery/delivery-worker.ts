import { hostname } from 'node:os';
import { isOutage, type Logger, randomHex } from '../core/index.ts';
import type { JobLease, RunnableJob } from './delivery-jobs.ts';
import { IngestYield } from './ingest-yield.ts';
import type { JobRunner } from './job-runner.ts';
import type { OutboxStore } from './outbox-store.ts';
import { WaitingJobs } from './waiting-jobs.ts';

export interface WorkerSettings {
  /** Attempts sending at once; as many again may wait for their record (see `sending`). */
  concurrency: number;
  /** Of those, how many may send to one target (an endpoint or a legacy webhook). */
  concurrencyPerTarget: number;
  /** Jobs taken already leased that may wait in memory for a slot (see `newJobLease`). */
  maxWaiting: number;
  leaseMs: number;
  pollMs: number;
  /** How long `stop()` lets attempts in flight finish before handing their jobs back. */
  drainMs: number;
  /** How long jobs may be left pending while ingest is saturated (see IngestYield); 0 never leaves them. */
  yieldMs: number;
}

/** While the worker yields to ingest, how often it looks whether ingest still is saturated. */
const YIELD_LOOK_MS = 100;

/**
 * The outbox worker of one process. It claims due jobs up to its concurrency, runs them, and claims more as slots
 * free up, while due jobs may remain. Jobs inserted already leased to it (`newJobLease`, `take`) it runs without a
 * claim, before claiming more. `wake()` (called on commit of pending jobs in this process, and on NOTIFY from others)
 * makes it look at once. Between wake-ups it sleeps until the earliest due time it knows of or `pollMs`, whichever
 * is sooner; each of those looks first asks the database for the earliest due job (its own retries, other
 * processes', expired leases) and claims only when one is due. Leases of jobs in flight are renewed every third of
 * the lease, with those taken and waiting for a slot, so only a dead (or frozen) worker's jobs are ever taken over;
 * a job still waiting a beat later is handed back instead (see beat). One target holds at most
 * `concurrencyPerTarget` slots: a receiver that hangs delays its own jobs, not every other endpoint's.
 */
export class DeliveryWorker {
  /** Unique per process start: a restarted process must not inherit its dead predecessor's leases. */
  readonly owner = `${hostname()}:${process.pid}:${randomHex(4)}`;
  private readonly store: OutboxStore;
  private readonly runner: JobRunner;
  private readonly settings: WorkerSettings;
  private readonly logger: Logger;
  private readonly now: () => Date;
  private readonly yielding: IngestYield;
  /** Told after jobs were handed back to the outbox as pending, to wake the workers of other processes. */
  private readonly handedBack: () => void;
  /** Jobs launched and not yet recorded, whose leases the worker renews. */
  private readonly inflight = new Map<string, Promise<void>>();
  /**
   * The launched jobs whose attempt is still sending, with their targets. Only these hold a slot: a finished attempt
   * waits for its record to commit (on SQLite, for the write lock ingest's writer holds most of the time under load),
   * and if it held its slot meanwhile, new jobs would find none and be left for a claim, which reads the email back
   * and sanitizes it again.
   */
  private readonly sending = new Map<string, string>();
  /** How many jobs are sending to each target. */
  private readonly sendingPerTarget = new Map<string, number>();
  private readonly waiting = new WaitingJobs();
  /**
   * Set when jobs were left pending (`waiting` was full, or a heartbeat handed jobs back): no lease is given until the
   * claims have taken every due job, so that the jobs left pending run before fresher ones.
   */
  private pendingLeftBehind = false;
  /** The jobs that were waiting at the last heartbeat (see beat). */
  private waitingAtBeat = new Set<string>();
  private pumping = false;
  private pumpAgain = false;
  private stopped = true;
  /** Set by start and the timer: the next look first asks the database when the earliest job is due. */
  private lookAhead = true;
  /** Whether a claim could find jobs: cleared by a claim that found fewer than it asked for (see look). */
  private dueMayExist = true;
  /** Full targets a short claim left out: their due jobs may still be pending (see freeSlot). */
  private readonly leftOut = new Set<string>();
  /** Counts `wake()` calls, so that a claim knows whether jobs were committed while it ran. */
  private wakeUps = 0;
  /** The earliest time a job is known to become due, in ms since the epoch. */
  private nextDueAt: number | undefined;
  private sleepTimer: NodeJS.Timeout | undefined;
  /** When the timer goes off, on `performance.now()`'s clock. */
  private sleepUntil = 0;
  private heartbeat: NodeJS.Timeout | undefined;

  constructor(deps: {
    store: OutboxStore;
    runner: JobRunner;
    settings: WorkerSettings;
    logger: Logger;
    now: () => Date;
    /** Whether senders queue up for their 250 in this process (see IngestYield). */
    ingestSaturated: () => boolean;
    handedBack: () => void;
  }) {
    this.store = deps.store;
    this.runner = deps.runner;
    this.settings = deps.settings;
    this.logger = deps.logger;
    this.now = deps.now;
    this.yielding = new IngestYield(deps.ingestSaturated, deps.settings.yieldMs);
    this.handedBack = deps.handedBack;
  }

  start(): void {
    if (!this.stopped) return;
    this.stopped = false;
    this.lookAhead = true;
    this.heartbeat = setInterval(() => this.beat(), Math.max(100, Math.floor(this.settings.leaseMs / 3)));
    this.heartbeat.unref();
    this.wake();
  }

  /**
   * Every third of the lease: hands back the jobs that have waited in memory since the last beat, their slots held by
   * slow receivers, for any worker to claim (another process may be idle), and renews the leases of the rest.
   */
  private beat(): void {
    // `waiting` is in arrival order, so the jobs left from the last beat are its first.
    let left = 0;
    while (left < this.waiting.length && this.waitingAtBeat.has(this.waiting.at(left)!.job.id)) left++;
    if (left > 0) {
      const stale = this.waiting.take(0, left).map(({ job }) => job.id);
      // Jobs committed from now on go behind them.
      this.pendingLeftBehind = true;
      this.store
        .release(this.owner, stale, this.now())
        .then(() => this.handedBack())
        .catch((error) => this.logger.warn({ err: error, deliveryIds: stale }, 'delivery hand-back failed'));
    }
    this.waitingAtBeat = new Set(this.waiting.ids());
    this.store
      .extendLeases(this.owner, this.leasedIds(), this.now(), this.settings.leaseMs)
      .catch((error) => this.logger.warn({ err: error }, 'delivery lease renewal failed'));
  }

  /**
   * A lease for the jobs of a transaction about to commit, so that they are inserted leased to this worker and `take`n
   * after the commit, with their email and its sanitized HTML at hand, instead of claimed and read back. Jobs without
   * a slot wait in memory, up to `maxWaiting`; beyond it, and while the worker is stopped, there is no lease and the
   * jobs are inserted pending, for any worker to claim.
   */
  newJobLease(): JobLease | undefined {
    if (this.stopped) return undefined;
    if (this.pendingLeftBehind || this.waiting.length >= this.settings.maxWaiting || this.yielding.now()) {
      this.pendingLeftBehind = true;
      return undefined;
    }
    return { owner: this.owner, leaseMs: this.settings.leaseMs };
  }

  /** Runs committed jobs leased to this worker by `newJobLease`; those that find no free slot wait for one. */
  take(jobs: readonly RunnableJob[]): void {
    if (this.stopped) {
      // Stopped since the lease was given: hand them back, as stop() did its own.
      const ids = jobs.map(({ job }) => job.id);
      this.store
        .release(this.owner, ids, this.now())
        .catch((error) => this.logger.warn({ err: error, deliveryIds: ids }, 'delivery release failed'));
      return;
    }
    this.waiting.add(jobs);
    this.launchWaiting();
  }

  /** Launches waiting jobs in arrival order while slots are open, passing over those whose target has none left. */
  private launchWaiting(): void {
    for (let index = 0; index < this.waiting.length && !this.stopped && this.openSlots() > 0; ) {
      if (this.launchableWaiting() === 0) return;
      if (this.roomOf(this.waiting.at(index)!.job.target_id) > 0) this.launch(this.waiting.take(index, 1)[0]!);
      else index++;
    }
  }

  /** Slots a target may still take. */
  private roomOf(target: string): number {
    return this.settings.concurrencyPerTarget - (this.sendingPerTarget.get(target) ?? 0);
  }

  /** Targets holding all the slots they may: a claim leaves their jobs for later. */
  private fullTargets(): string[] {
    return [...this.sendingPerTarget.keys()].filter((target) => this.roomOf(target) <= 0);
  }

  private holds(id: string): boolean {
    return this.inflight.has(id) || this.waiting.has(id);
  }

  private leasedIds(): string[] {
    return [...this.inflight.keys(), ...this.waiting.ids()];
  }

  /**
   * Looks at the outbox now: jobs may be due (new pending ones were committed, another process said so). Calls during
   * a look are folded into one more look right after it.
   */
  wake(): void {
    this.wakeUps++;
    this.dueMayExist = true;
    this.pump();
  }

  private pump(): void {
    if (this.stopped) return;
    if (this.pumping) {
      this.pumpAgain = true;
      return;
    }
    void this.look();
  }

  /**
   * Claims while due jobs may exist and a claim is worthwhile. A claim that returns fewer jobs than it asked for, with
   * no wake-up while it ran, leaves none due: from then on only a wake-up, a retry of its own coming due or the poll
   * (which reads the earliest due time first, and claims only if it has passed) makes the worker claim again.
   * Finishing jobs do not: with the fresh jobs handed over leased, a claim per finished delivery would find nothing,
   * at the cost of a write.
   */
  private async look(): Promise<void> {
    this.pumping = true;
    clearTimeout(this.sleepTimer);
    this.sleepTimer = undefined;
    try {
      do {
        this.pumpAgain = false;
        if (this.lookAhead) {
          this.lookAhead = false;
          this.nextDueAt = (await this.store.nextDueAt())?.getTime();
          if (this.nextDueAt !== undefined && this.nextDueAt <= this.now().getTime()) this.dueMayExist = true;
          // No job is due: none was left pending while yielding.
          else this.yielding.caughtUp();
        }
        while (!this.stopped && this.dueMayExist && this.claimWorthwhile()) {
          const wanted = this.freeSlots();
          const wakeUpsBefore = this.wakeUps;
          const full = this.fullTargets();
          const claimedAt = this.now();
          const jobs = await this.store.claim(this.owner, wanted, claimedAt, this.settings.leaseMs, full);
          // A job of its own whose lease ran out (its renewal waited for the write lock) is still held here. One claim
          // may bring a target more jobs than it has room for: those wait for its slots.
          this.waiting.add(await this.runner.readClaimed(jobs.filter((job) => !this.holds(job.id))));
          this.launchWaiting();
          // Jobs committed while the claim ran may be missing from its answer (its snapshot or its `now` came first);
          // the jobs of full targets are, until one of their slots frees (see freeSlot).
          if (jobs.length < wanted) {
            // Every job left pending before the claim began is taken: fresh ones may be leased again.
            this.pendingLeftBehind = false;
            // Only a claim that left no target out has caught up with the jobs left while yielding.
            if (full.length === 0) this.yielding.caughtUp();
            if (this.wakeUps === wakeUpsBefore) this.dueMayExist = false;
            for (const target of full) this.leftOut.add(target);
            // A due time the claim passed is a left-out job's, whose freed slot claims it (see freeSlot): as the timer's
            // time it would make the worker look every millisecond until then.
            if (full.length > 0 && this.nextDueAt !== undefined && this.nextDueAt <= claimedAt.getTime()) {
              this.nextDueAt = undefined;
            }
          }
        }
      } while (this.pumpAgain && !this.stopped);
    } catch (error) {
      // A database out of reach is an outage, not a bug: the next poll claims again.
      if (!this.stopped)
        this.logger[isOutage(error) ? 'warn' : 'error']({ err: error }, 'delivery worker could not claim jobs');
    } finally {
      this.pumping = false;
    }
    if (this.stopped) return;
    if (this.pumpAgain) return this.pump();
    this.sleep();
  }

  /**
   * Sets the timer for the next look, at the earliest due time known or after `pollMs`, whichever is sooner; a timer
   * already set to go off sooner stays. The timer's look reads the earliest due time before it claims. Jobs known to
   * be due and not claimed wait for a freed slot or the yield's end, not for the timer, which would go off every
   * millisecond meanwhile.
   */
  private sleep(): void {
    const dueIn =
      this.nextDueAt === undefined || this.dueMayExist
        ? Number.POSITIVE_INFINITY
        : this.nextDueAt - this.now().getTime();
    const yieldLook = this.yielding.begun ? YIELD_LOOK_MS : Number.POSITIVE_INFINITY;
    const delay = Math.max(1, Math.min(this.settings.pollMs, dueIn, yieldLook));
    const at = performance.now() + delay;
    if (this.sleepTimer && this.sleepUntil <= at) return;
    clearTimeout(this.sleepTimer);
    this.sleepUntil = at;
    this.sleepTimer = setTimeout(() => {
      this.sleepTimer = undefined;
      this.lookAhead = true;
      this.pump();
    }, delay);
    this.sleepTimer.unref();
  }

  /**
   * Whether to claim now: when idle, at once; when busy, only once a quarter of the slots is free. A claim is a
   * commit on the connection the event loop uses; claiming each slot as it frees made it one commit per delivery,
   * while each slot's job stays in flight only for one attempt.
   */
  private claimWorthwhile(): boolean {
    if (this.yielding.now()) return false;
    const free = this.freeSlots();
    return this.inflight.size === 0 ? free > 0 : free >= Math.ceil(this.settings.concurrency / 4);
  }

  /** Slots no job is sending in, while fewer than `concurrency` jobs wait for their record. */
  private openSlots(): number {
    const { concurrency } = this.settings;
    return Math.min(concurrency - this.sending.size, 2 * concurrency - this.inflight.size);
  }

  /** Open slots that no job waiting will take. */
  private freeSlots(): number {
    return this.openSlots() - this.launchableWaiting();
  }

  private launchableWaiting(): number {
    return this.waiting.launchable((target) => this.roomOf(target));
  }

  private launch(runnable: RunnableJob): void {
    const { job } = runnable;
    this.sending.set(job.id, job.target_id);
    this.sendingPerTarget.set(job.target_id, (this.sendingPerTarget.get(job.target_id) ?? 0) + 1);
    const running = this.runner
      .run(runnable, this.owner, () => this.attempted(job.id))
      .then((retryAt) => {
        const at = retryAt?.getTime();
        if (
          at !== undefined &&
          (this.nextDueAt === undefined || at < this.nextDueAt || this.nextDueAt <= this.now().getTime())
        ) {
          this.nextDueAt = at;
          if (!this.stopped && !this.pumping) this.sleep();
        }
      })
      .catch((error) => {
        // After stop() the job was handed back and the database may be closing: the next owner retries it.
        // So may a database out of reach: the lease runs out and the job is tried again.
        const level = this.stopped || isOutage(error) ? 'warn' : 'error';
        this.logger[level]({ err: error, deliveryId: job.id }, 'delivery attempt failed unexpectedly');
      })
      .finally(() => {
        this.freeSlot(job.id);
        this.inflight.delete(job.id);
        this.launchWaiting();
        if (this.dueMayExist) this.pump();
      });
    this.inflight.set(job.id, running);
  }

  /** Frees the slot of a job whose attempt is over, while its record commits. */
  private attempted(id: string): void {
    if (!this.freeSlot(id)) return;
    this.launchWaiting();
    if (this.dueMayExist) this.pump();
  }

  /** Frees a job's slot, if it holds one; a target that was full may have due jobs that a claim left out. */
  private freeSlot(id: string): boolean {
    const target = this.sending.get(id);
    if (target === undefined) return false;
    this.sending.delete(id);
    const count = this.sendingPerTarget.get(target) ?? 1;
    // Only a target a claim left out may have due jobs pending; claiming for every other would be a write for nothing,
    // and so would claiming for it while jobs of its own wait to take the slot (the claim would leave it out again).
    if (!this.waiting.holdsFor(target) && this.leftOut.delete(target)) this.dueMayExist = true;
    if (count > 1) this.sendingPerTarget.set(target, count - 1);
    else this.sendingPerTarget.delete(target);
    return true;
  }

  /**
   * Stops claiming, lets attempts in flight finish for up to `drainMs`, then hands the rest back, with the jobs
   * waiting for a slot.
   */
  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    clearTimeout(this.sleepTimer);
    clearInterval(this.heartbeat);
    while (this.pumping) await new Promise((resolve) => setTimeout(resolve, 5));
    if (this.inflight.size > 0) {
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([
        Promise.allSettled(this.inflight.values()),
        new Promise((resolve) => {
          timer = setTimeout(resolve, this.settings.drainMs);
        }),
      ]);
      clearTimeout(timer);
    }
    const leased = this.leasedIds();
    this.waiting.take(0, this.waiting.length);
    await this.store.release(this.owner, leased, this.now());
  }
}
