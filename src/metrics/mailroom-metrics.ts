import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client';
import type { Clock, Logger } from '../core/index.ts';
import { ATTEMPT_OUTCOMES } from '../delivery/index.ts';
import { ENDPOINT_TYPES } from '../endpoints/index.ts';
import { INGEST_STAGES, type IngestStageSeconds } from '../ingest/index.ts';
import { SMTP_REFUSAL_REASONS } from '../smtp/index.ts';

/** The delivery outbox as one query reads it at scrape time. */
export interface DeliveryQueueState {
  /** Jobs not finished: pending, or being attempted. */
  depth: number;
  /** When the oldest unfinished job was queued; null when there is none. */
  oldestQueuedAt: Date | null;
}

export interface MetricsDependencies {
  clock: Clock;
  logger: Logger;
  /** Read once per scrape. */
  deliveryQueue(): Promise<DeliveryQueueState>;
}

/**
 * How long a scrape waits for the delivery queue's read: half of Prometheus' default scrape timeout, room for a read
 * over hundreds of thousands of jobs, and still an answer with the rest of the metrics (SMTP's 451s during an outage
 * among them, which need no database) before Prometheus gives up.
 */
const QUEUE_READ_TIMEOUT_MS = 5000;

/** From a few milliseconds (a small message on a fast disk) to the SMTP client's patience. */
const INGEST_BUCKETS_SECONDS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];
/**
 * A stage takes from well under a millisecond (rules, a blob on a quiet disk) to the whole of a slow ingest; finer
 * around 10 ms, where a busy machine's stages sit.
 */
const INGEST_STAGE_BUCKETS_SECONDS = [
  0.0005, 0.001, 0.0025, 0.005, 0.0075, 0.01, 0.015, 0.02, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 5, 30,
];
/** A webhook or a forward, from a loopback receiver to a timed-out one. */
const DELIVERY_BUCKETS_SECONDS = [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

/**
 * The metrics of one app instance, in a registry of its own (several apps can share a process, as tests do), with
 * Node's process metrics (memory, event-loop lag, ...) in it too. Capabilities report through the recorders
 * (`smtp`, `delivery`, `domains`), which app.ts hands them; counters count what this process did since it started.
 */
export function createMetrics(deps: MetricsDependencies) {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  const registers = [registry];
  // The gauges read from the database, rendered only when that read answered.
  const queueRegistry = new Registry();

  const received = new Counter({
    name: 'mailroom_smtp_messages_received_total',
    help: 'Messages accepted over SMTP (answered 250 after they were stored)',
    registers,
  });
  const receivedBytes = new Counter({
    name: 'mailroom_smtp_received_bytes_total',
    help: 'DATA bytes of the messages accepted over SMTP',
    registers,
  });
  const refused = new Counter({
    name: 'mailroom_smtp_refusals_total',
    help: 'SMTP refusals (of a recipient, a message or a connection) by reason',
    labelNames: ['reason'],
    registers,
  });
  const ingestLatency = new Histogram({
    name: 'mailroom_ingest_duration_seconds',
    help: 'From the end of DATA to the 250 answer: blob written, analysed and committed',
    buckets: INGEST_BUCKETS_SECONDS,
    registers,
  });
  const ingestStageLatency = new Histogram({
    name: 'mailroom_ingest_stage_duration_seconds',
    help: 'Ingest of accepted messages by stage: blob and analysis (at once), then rules and write, each with its wait',
    labelNames: ['stage'],
    buckets: INGEST_STAGE_BUCKETS_SECONDS,
    registers,
  });
  const attempts = new Counter({
    name: 'mailroom_delivery_attempts_total',
    help: 'Delivery attempts by endpoint type and outcome (success, retry, failed: no retry left)',
    labelNames: ['endpoint_type', 'outcome'],
    registers,
  });
  const attemptLatency = new Histogram({
    name: 'mailroom_delivery_duration_seconds',
    help: 'Duration of delivery attempts by endpoint type',
    labelNames: ['endpoint_type'],
    buckets: DELIVERY_BUCKETS_SECONDS,
    registers,
  });
  const queueDepth = new Gauge({
    name: 'mailroom_delivery_queue_depth',
    help: 'Delivery jobs not finished (pending or being attempted), in the whole installation',
    registers: [queueRegistry],
  });
  const oldestAge = new Gauge({
    name: 'mailroom_delivery_oldest_pending_age_seconds',
    help: 'Seconds the oldest unfinished delivery job has waited since it was queued, or queued again by hand',
    registers: [queueRegistry],
  });
  const verifications = new Counter({
    name: 'mailroom_domain_verification_checks_total',
    help: 'Domain DNS checks by result (verified: every required record matched)',
    labelNames: ['result'],
    registers,
  });

  // Every series is there from the start, at 0: one that appeared only at its first event would hide that event from
  // rate() and increase(), which need a sample before it. The values are the lists the reporting capabilities keep.
  for (const reason of SMTP_REFUSAL_REASONS) refused.inc({ reason }, 0);
  for (const stage of INGEST_STAGES) ingestStageLatency.zero({ stage });
  for (const endpointType of ENDPOINT_TYPES) {
    attemptLatency.zero({ endpoint_type: endpointType });
    for (const outcome of ATTEMPT_OUTCOMES) attempts.inc({ endpoint_type: endpointType, outcome }, 0);
  }
  for (const result of ['verified', 'unverified']) verifications.inc({ result }, 0);

  /** The read in flight, which scrapes arriving meanwhile share, so a stalled database never holds more than one. */
  let reading: Promise<DeliveryQueueState> | undefined;
  function readQueue(): Promise<DeliveryQueueState> {
    reading ??= deps.deliveryQueue().finally(() => {
      reading = undefined;
    });
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_resolve, reject) => {
      timer = setTimeout(() => reject(new Error(`no answer in ${QUEUE_READ_TIMEOUT_MS} ms`)), QUEUE_READ_TIMEOUT_MS);
    });
    return Promise.race([reading, timeout]).finally(() => clearTimeout(timer));
  }

  return {
    smtp: {
      refused(reason: string): void {
        refused.inc({ reason });
      },
      accepted(bytes: number, ingestSeconds: number, stageSeconds: IngestStageSeconds): void {
        received.inc();
        receivedBytes.inc(bytes);
        ingestLatency.observe(ingestSeconds);
        for (const stage of INGEST_STAGES) ingestStageLatency.observe({ stage }, stageSeconds[stage]);
      },
    },
    delivery: {
      attempted(endpointType: string, outcome: string, seconds: number): void {
        attempts.inc({ endpoint_type: endpointType, outcome });
        attemptLatency.observe({ endpoint_type: endpointType }, seconds);
      },
    },
    domains: {
      checked(verified: boolean): void {
        verifications.inc({ result: verified ? 'verified' : 'unverified' });
      },
    },
    contentType: registry.contentType,
    /**
     * The Prometheus text of every metric, the outbox read for this scrape; without the queue's gauges when the
     * database does not answer that read in time (absent, they tell an alert on them nothing false).
     */
    async render(): Promise<string> {
      const text = await registry.metrics();
      try {
        const queue = await readQueue();
        queueDepth.set(queue.depth);
        const ageMs = queue.oldestQueuedAt ? deps.clock.now().getTime() - queue.oldestQueuedAt.getTime() : 0;
        oldestAge.set(Math.max(0, ageMs) / 1000);
      } catch (error) {
        deps.logger.warn({ err: error }, 'delivery queue not read for a scrape: its gauges left out');
        return text;
      }
      return `${text}\n${await queueRegistry.metrics()}`;
    },
  };
}

export type Metrics = ReturnType<typeof createMetrics>;
