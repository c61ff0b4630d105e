/**
 * The soak: Mailroom run as users run it (`src/main.ts` as a child process) for SOAK_MINUTES (default 30) under a
 * steady, modest, mixed load, killed with SIGKILL halfway and started again on the same data, then checked for lost
 * and duplicated mail. Loopback only; everything bounded in count and time.
 *   - Ingest: SOAK_RATE (default 30) messages a second of 10 KB on average (see soak-load.ts), each answered 250
 *     recorded with its email ids; what is refused with a 4xx or left unanswered is retried every second (for up to
 *     two minutes after the load ends). Only a 250 counts as acknowledged.
 *   - Deliveries: every message to a healthy receiver (always 200), every third one also to a flaky receiver
 *     (25% answered 500, 5% held past the endpoint's 2 s timeout), both bench/webhook-counter.ts processes logging
 *     what they answered 200, by Message-ID. DELIVERY_RETRY_SCALE=0.1, so the flaky endpoint's three retries (the
 *     default) come within the run: 0.5 s, 30 s and 3 min after the failures, then the delivery fails.
 *   - Reads: a search, a page of the list, a read and a raw read of a fresh email, in turn, four a second.
 *   - Retention: the account keeps mail a day and the sweep runs every 15 s. Periods are whole days, so the bench
 *     plays the clock: every 15 s it moves the received time of mail older than a third of the run two days back,
 *     straight in the database (not while Mailroom is down, nor after the load), and records which emails it aged.
 * Then the load stops, the healthy receiver and then the flaky endpoint's last retries are waited for (at most
 * 5 minutes in all), and each acknowledged message is checked: each email id stored, or expired (aged, then gone),
 * else lost; delivered to the healthy receiver at least once, and how often more (a duplicate is "after the crash"
 * when its first arrival came before the kill and the repeat after it). Mailroom's RSS (/proc) and its disk (blob segments; SQLite files or PostgreSQL relation sizes)
 * are sampled every 10 s. BENCH_DATABASE_URL (or TEST_DATABASE_URL) runs it on PostgreSQL.
 */
import { randomBytes } from 'node:crypto';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { startDnsServer } from '../test/helpers/dns-server.ts';
import { createVerifiedDomain } from '../test/helpers/domains.ts';
import { type ApiClient, apiClient } from '../test/helpers/http.ts';
import { freePort } from '../test/helpers/ports.ts';
import { createInstallation, type ServerProcess, startServerProcess } from '../test/helpers/process.ts';
import { startHelper } from './ingest.ts';
import {
  type AckedMessage,
  FLAKY_ADDRESS,
  HEALTHY_ADDRESS,
  newRunId,
  READ_KINDS,
  type ReadKind,
  readWhile,
  SOAK_DOMAIN,
  sendPaced,
} from './soak-load.ts';
import { filesUnder, postgresProbe, rssMb, sqliteProbe } from './soak-probes.ts';
import { table } from './table.ts';

const SAMPLE_MS = 10_000;
const AGE_EVERY_MS = 15_000;
/** How long the end waits for the healthy receiver, and for the flaky endpoint's last retries (at most 3.5 min). */
const DRAIN_LIMIT_MS = 300_000;
const RETRY_SECONDS = 120;
/** A start on a busy machine (other benches, recovery after the kill) may take a while. */
const START_LIMIT_MS = 120_000;

export interface SoakOptions {
  minutes: number;
  ratePerSecond: number;
  /** PostgreSQL when set, else SQLite. */
  databaseUrl?: string;
}

interface Sample {
  seconds: number;
  rssMb: number | null;
  blobsMb: number;
  databaseMb: number;
  pendingDeliveries: number | null;
  /** The machine's one-minute load average, for what else ran beside the soak. */
  loadAverage: number;
}

export interface SoakResult {
  database: 'sqlite' | 'postgres';
  minutes: number;
  ratePerSecond: number;
  achievedRatePerSecond: number;
  crash: { atSeconds: number; restartSeconds: number };
  /** Mailroom processes that ended without the soak ending them (each started again), with their log's end. */
  unexpectedExits: string[];
  messages: {
    sent: number;
    acknowledged: number;
    retriedThenAcknowledged: number;
    refused: number;
    gaveUp: number;
    failedAttempts: Record<string, number>;
  };
  emails: {
    acknowledged: number;
    stored: number;
    expired: number;
    agedNotYetExpired: number;
    lost: number;
    /** Emails in the database no 250 named (a copy stored twice, or a message the client gave up on). */
    storedUnacknowledged: number;
  };
  lostEmailIds: string[];
  healthy: {
    expected: number;
    delivered: number;
    undelivered: number;
    duplicatesAfterCrash: number;
    duplicatesOtherwise: number;
    /** Duplicates that came with a webhook-id of their own: the message was stored twice. */
    duplicatesStoredTwice: number;
    /** From the 250 to the first arrival. */
    latencyP50Ms: number;
    latencyP99Ms: number;
    drainSeconds: number;
  };
  /** `pendingAtEnd`: still to be retried when the drain ended; the rest of those not delivered ran out of retries. */
  flaky: { expected: number; delivered: number; pendingAtEnd: number; answered500: number };
  reads: Record<ReadKind, { requests: number; errors: number; unavailable: number; p50Ms: number; p99Ms: number }>;
  rawCheck: { checked: number; intact: number; failures: string[] };
  /** Mailroom's RSS: the first sample's, the highest, and the last before the final stop. */
  memory: { firstMb: number; maxMb: number; lastMb: number };
  disk: {
    blobsPeakMb: number;
    blobsEndMb: number;
    segmentsWritten: number;
    segmentsRemoved: number;
    reclaimedMb: number;
    databaseStartMb: number;
    databasePeakMb: number;
    databaseEndMb: number;
    /** SQLite: the share of the main database's pages free for reuse at the end. */
    sqliteFreeShare?: number;
  };
  /**
   * Per minute of the run: Mailroom's RSS (lowest and highest sample), the blob store's and the database's size and
   * the deliveries pending at its last sample, the healthy receiver's p99 latency for the messages acknowledged in
   * it, and the machine's load average (other work shares it).
   */
  perMinute: Array<{
    minute: number;
    rssMinMb: number | null;
    rssMaxMb: number | null;
    blobsMb: number;
    databaseMb: number;
    pendingDeliveries: number | null;
    healthyP99Ms: number | null;
    loadAverage: number;
  }>;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const mb = (bytes: number) => Math.round((bytes / 1048576) * 10) / 10;

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  return Math.round(sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]! * 10) / 10;
}

async function check<T = any>(response: Promise<{ status: number; body: T }>, what: string): Promise<T> {
  const { status, body } = await response;
  if (status >= 300) throw new Error(`${what}: ${status} ${JSON.stringify(body)}`);
  return body;
}

/** What a receiver answered 200 at once, by Message-ID: [ms since the epoch, webhook-id] (see webhook-counter.ts). */
type ReceiverLog = Record<string, Array<[number, string]>>;

async function receiverGet<T>(port: number, path: string): Promise<T> {
  return (await (await fetch(`http://127.0.0.1:${port}${path}`)).json()) as T;
}

/**
 * The soak's domain with its two addresses, each routed to its receiver's endpoint, and a day's retention for the
 * account. Resolves to the flaky endpoint's id.
 */
async function setUp(api: ApiClient, dns: Awaited<ReturnType<typeof startDnsServer>>, ports: Record<string, number>) {
  const { id: domainId } = await createVerifiedDomain(api, dns, SOAK_DOMAIN);
  const endpoint = (name: string, port: number, config: object) =>
    check(
      api.post('/api/v2/endpoints', {
        name,
        type: 'webhook',
        config: { url: `http://127.0.0.1:${port}/hook`, ...config },
      }),
      name,
    );
  const healthy = await endpoint('Healthy receiver', ports.healthy!, {});
  const flaky = await endpoint('Flaky receiver', ports.flaky!, { timeout: 2 });
  for (const [address, endpointId] of [
    [HEALTHY_ADDRESS, healthy.id],
    [FLAKY_ADDRESS, flaky.id],
  ]) {
    await check(api.post('/api/v2/email-addresses', { address, domainId, endpointId }), address);
  }
  await check(api.put('/api/v2/retention', { retentionDays: 1 }), 'retention');
  return String(flaky.id);
}

/** What became of each acknowledged message: its emails stored, expired or lost; its deliveries and duplicates. */
function checkAcknowledged(
  acked: Map<string, AckedMessage>,
  seen: {
    stored: Set<string>;
    aged: Set<string>;
    healthyLog: ReceiverLog;
    flakyLog: ReceiverLog;
    killedAt: number;
    started: number;
  },
) {
  const emails = { acknowledged: 0, stored: 0, expired: 0, agedNotYetExpired: 0, lost: 0, storedUnacknowledged: 0 };
  const acknowledgedIds = new Set([...acked.values()].flatMap((message) => message.emailIds));
  for (const id of seen.stored) if (!acknowledgedIds.has(id)) emails.storedUnacknowledged++;
  const lostEmailIds: string[] = [];
  const healthy = { delivered: 0, undelivered: 0, afterCrash: 0, otherwise: 0, storedTwice: 0 };
  const flaky = { expected: 0, delivered: 0 };
  const latencies: number[] = [];
  const latenciesByMinute = new Map<number, number[]>();
  for (const [messageId, message] of acked) {
    for (const id of message.emailIds) {
      emails.acknowledged++;
      if (seen.stored.has(id)) {
        emails.stored++;
        if (seen.aged.has(id)) emails.agedNotYetExpired++;
      } else if (seen.aged.has(id)) emails.expired++;
      else {
        emails.lost++;
        if (lostEmailIds.length < 20) lostEmailIds.push(id);
      }
    }
    const [first, ...repeats] = seen.healthyLog[messageId] ?? [];
    if (!first) healthy.undelivered++;
    else {
      healthy.delivered++;
      const latency = first[0] - message.ackedAt;
      latencies.push(latency);
      const minute = Math.floor((message.ackedAt - seen.started) / 60_000);
      latenciesByMinute.set(minute, [...(latenciesByMinute.get(minute) ?? []), latency]);
      for (const repeat of repeats) {
        if (first[0] < seen.killedAt && repeat[0] >= seen.killedAt) healthy.afterCrash++;
        else healthy.otherwise++;
        if (repeat[1] !== first[1]) healthy.storedTwice++;
      }
    }
    if (message.flaky) {
      flaky.expected++;
      if (seen.flakyLog[messageId]) flaky.delivered++;
    }
  }
  latencies.sort((a, b) => a - b);
  return {
    emails,
    lostEmailIds,
    healthy: {
      expected: acked.size,
      delivered: healthy.delivered,
      undelivered: healthy.undelivered,
      duplicatesAfterCrash: healthy.afterCrash,
      duplicatesOtherwise: healthy.otherwise,
      duplicatesStoredTwice: healthy.storedTwice,
      latencyP50Ms: percentile(latencies, 50),
      latencyP99Ms: percentile(latencies, 99),
    },
    flaky,
    latencyP99ByMinute: new Map(
      [...latenciesByMinute].map(([minute, values]) => [
        minute,
        percentile(
          values.sort((a, b) => a - b),
          99,
        ),
      ]),
    ),
  };
}

/**
 * Reads back raw every email acknowledged within a minute of the kill and 1,000 others, of those stored and not
 * aged (the sweep, still running, may take an aged one meanwhile).
 */
async function readBackRaw(
  api: ApiClient,
  acked: Map<string, AckedMessage>,
  stored: Set<string>,
  aged: Set<string>,
  killedAt: number,
) {
  const readable = [...acked].flatMap(([messageId, message]) =>
    message.emailIds.filter((id) => stored.has(id) && !aged.has(id)).map((id) => ({ messageId, id, message })),
  );
  const nearKill = readable.filter(({ message }) => Math.abs(message.ackedAt - killedAt) < 60_000);
  const others = readable.filter(({ message }) => Math.abs(message.ackedAt - killedAt) >= 60_000);
  const sample = [...nearKill, ...others.sort(() => Math.random() - 0.5).slice(0, 1000)];
  const result = { checked: sample.length, intact: 0, failures: [] as string[] };
  for (const { messageId, id } of sample) {
    const raw = await api.get(`/api/v2/mail/${id}/raw`);
    if (raw.status === 200 && String(raw.body).includes(messageId)) result.intact++;
    else if (result.failures.length < 10) result.failures.push(`${id}: ${raw.status}`);
  }
  return result;
}

function perMinuteOf(samples: Sample[], latencyP99ByMinute: Map<number, number>): SoakResult['perMinute'] {
  const minutes = new Map<number, Sample[]>();
  for (const entry of samples) {
    const minute = Math.floor(entry.seconds / 60);
    minutes.set(minute, [...(minutes.get(minute) ?? []), entry]);
  }
  return [...minutes].map(([minute, entries]) => {
    const rss = entries.flatMap((entry) => (entry.rssMb === null ? [] : [entry.rssMb]));
    const last = entries.at(-1)!;
    return {
      minute,
      rssMinMb: rss.length > 0 ? Math.min(...rss) : null,
      rssMaxMb: rss.length > 0 ? Math.max(...rss) : null,
      blobsMb: last.blobsMb,
      databaseMb: last.databaseMb,
      pendingDeliveries: last.pendingDeliveries,
      healthyP99Ms: latencyP99ByMinute.get(minute) ?? null,
      loadAverage: last.loadAverage,
    };
  });
}

export async function runSoak(options: SoakOptions): Promise<SoakResult> {
  const apiKey = `mr_bench_${randomBytes(16).toString('hex')}`;
  const schema = options.databaseUrl ? `soak_${randomBytes(4).toString('hex')}` : undefined;
  const runSeconds = options.minutes * 60;
  const ageAfterMs = Math.max(60_000, (runSeconds * 1000) / 3);
  const dns = await startDnsServer();
  const healthy = await startHelper('webhook-counter.ts', { WEBHOOK_LOG: 'true' });
  const flaky = await startHelper('webhook-counter.ts', {
    WEBHOOK_LOG: 'true',
    WEBHOOK_FAIL_SHARE: '0.25',
    WEBHOOK_STALL_SHARE: '0.05',
    WEBHOOK_STALL_MS: '3000',
  });
  const installation = await createInstallation({
    MAILROOM_API_KEY: apiKey,
    DNS_SERVERS: dns.address,
    LOG_LEVEL: 'error',
    PORT: String(await freePort()),
    SMTP_PORT: String(await freePort()),
    SMTP_MAX_CONNECTIONS_PER_IP: '20',
    RETENTION_SWEEP_SECONDS: '15',
    DELIVERY_RETRY_SCALE: '0.1',
    ...(options.databaseUrl
      ? { DATABASE_URL: options.databaseUrl, DATABASE_SCHEMA: schema!, DATABASE_POOL_SIZE: '10' }
      : {}),
  });
  const { env, dataDir } = installation;
  const database = options.databaseUrl ? postgresProbe(options.databaseUrl, schema!) : sqliteProbe(dataDir);
  /** Mailroom's stderr (the last 20 lines), and how each process ended that the soak did not end (with its log's end). */
  const stderrTail: string[] = [];
  const unexpectedExits: string[] = [];
  let ending = false;
  let mailroom: ServerProcess | undefined;
  let restarting = false;
  let recovery: Promise<void> = Promise.resolve();
  const start = async (): Promise<ServerProcess> => {
    const started = await startServerProcess(env, START_LIMIT_MS);
    started.child.stderr?.on('data', (chunk) => {
      stderrTail.push(...String(chunk).trimEnd().split('\n'));
      stderrTail.splice(0, Math.max(0, stderrTail.length - 20));
    });
    started.child.on('exit', (code, signal) => {
      if (ending) return;
      const log = `${stderrTail.join('\n')} ${started.stdout().slice(-2000)}`;
      unexpectedExits.push(`${new Date().toISOString()} exit ${code ?? signal}: ${log}`);
      // Ended from outside (a crash, or another program's signal on a shared machine): started again at once, as a
      // supervisor would, so that the soak goes on and its checks still hold.
      restarting = true;
      mailroom = undefined;
      recovery = start().then(
        (next) => {
          mailroom = next;
          restarting = false;
        },
        (error) => {
          unexpectedExits.push(`restart failed: ${error}`);
        },
      );
    });
    return started;
  };
  mailroom = await start();
  const api = apiClient(mailroom.httpUrl, apiKey);
  try {
    const flakyEndpointId = await setUp(api, dns, { healthy: healthy.port, flaky: flaky.port });
    const started = Date.now();
    const seconds = () => Math.round((Date.now() - started) / 100) / 10;
    let finished = false;
    let loadEnded = false;
    const aged = new Set<string>();
    const recent: string[] = [];
    const samples: Sample[] = [];
    /** Every blob segment seen, with the largest size seen. */
    const segments = new Map<string, number>();
    const blobsDir = join(dataDir, 'blobs');

    const sampler = (async () => {
      while (!finished) {
        const blobs = filesUnder(blobsDir);
        for (const [path, size] of blobs) {
          if (path.endsWith('.seg')) segments.set(path, Math.max(size, segments.get(path) ?? 0));
        }
        const pending = restarting
          ? null
          : await api
              .get('/api/v2/deliveries?status=pending&limit=1')
              .then((response) => Number(response.body.pagination.total))
              .catch(() => null);
        samples.push({
          seconds: seconds(),
          rssMb: rssMb(mailroom?.child.pid),
          blobsMb: mb([...blobs.values()].reduce((sum, size) => sum + size, 0)),
          databaseMb: mb(await database.sizeBytes()),
          pendingDeliveries: pending,
          loadAverage: Math.round(loadavg()[0]! * 10) / 10,
        });
        await sleep(SAMPLE_MS);
      }
    })();
    const ager = (async () => {
      while (!loadEnded) {
        await sleep(AGE_EVERY_MS);
        if (restarting || loadEnded) continue;
        const now = Date.now();
        const ids = await database.age(
          new Date(now - ageAfterMs).toISOString(),
          new Date(now - 86_400_000).toISOString(),
        );
        for (const id of ids) aged.add(id);
      }
    })();
    const crash = (async () => {
      await sleep((runSeconds * 1000) / 2);
      await recovery;
      restarting = true;
      const atSeconds = seconds();
      const killedAt = Date.now();
      ending = true;
      await mailroom!.stop('SIGKILL');
      ending = false;
      mailroom = undefined;
      mailroom = await start();
      restarting = false;
      return { atSeconds, killedAt, restartSeconds: (Date.now() - killedAt) / 1000 };
    })();

    let stopReading: () => void = () => {};
    const reading = readWhile(
      api,
      () => recent[Math.floor(Math.random() * recent.length)],
      250,
      new Promise<void>((resolve) => {
        stopReading = resolve;
      }),
    );
    const sent = await sendPaced({
      port: Number(env.SMTP_PORT),
      ratePerSecond: options.ratePerSecond,
      seconds: runSeconds,
      retrySeconds: RETRY_SECONDS,
      maxInFlight: 64,
      connections: 16,
      runId: newRunId(),
      onAck(_messageId, message) {
        recent.push(...message.emailIds);
        if (recent.length > 400) recent.splice(0, recent.length - 200);
      },
    });
    loadEnded = true;
    stopReading();
    const reads = await reading;
    const { killedAt, ...crashFigures } = await crash;

    const flakyDeliveries = async (status: string) =>
      Number(
        (await api.get(`/api/v2/deliveries?endpointId=${flakyEndpointId}&status=${status}&limit=1`)).body.pagination
          .total,
      );
    const flakyLeft = async () => (await flakyDeliveries('pending')) + (await flakyDeliveries('processing'));
    // Drain: the healthy receiver has every acknowledged message once it has seen as many webhook-ids; then the
    // flaky endpoint's retries run out.
    const drainStart = Date.now();
    const drainUntil = drainStart + DRAIN_LIMIT_MS;
    while (
      (await receiverGet<{ unique: number }>(healthy.port, '/count')).unique < sent.acked.size &&
      Date.now() < drainUntil
    ) {
      await sleep(500);
    }
    const drainSeconds = (Date.now() - drainStart) / 1000;
    while ((await flakyLeft()) > 0 && Date.now() < drainUntil) await sleep(1000);
    finished = true;
    await Promise.all([sampler, ager]);

    const [healthyLog, flakyLog, flakyCount] = await Promise.all([
      receiverGet<ReceiverLog>(healthy.port, '/log'),
      receiverGet<ReceiverLog>(flaky.port, '/log'),
      receiverGet<{ failed: number }>(flaky.port, '/count'),
    ]);
    const stored = await database.emailIds();
    const checked = checkAcknowledged(sent.acked, { stored, aged, healthyLog, flakyLog, killedAt, started });
    const rawCheck = await readBackRaw(api, sent.acked, stored, aged, killedAt);
    const pendingAtEnd = await flakyLeft();
    const sqliteFreeShare = await database.freeShare();
    await recovery;
    ending = true;
    await mailroom!.stop('SIGTERM');

    const rss = samples.flatMap((entry) => (entry.rssMb === null ? [] : [entry.rssMb]));
    const present = filesUnder(blobsDir);
    const removed = [...segments].filter(([path]) => !present.has(path));
    const readFigures = Object.fromEntries(
      READ_KINDS.map((kind) => {
        const { latenciesMs, ...counts } = reads[kind];
        latenciesMs.sort((a, b) => a - b);
        return [kind, { ...counts, p50Ms: percentile(latenciesMs, 50), p99Ms: percentile(latenciesMs, 99) }];
      }),
    ) as SoakResult['reads'];
    return {
      database: options.databaseUrl ? 'postgres' : 'sqlite',
      minutes: options.minutes,
      ratePerSecond: options.ratePerSecond,
      achievedRatePerSecond: sent.ratePerSecond,
      crash: crashFigures,
      unexpectedExits,
      messages: {
        sent: sent.sent,
        acknowledged: sent.acked.size,
        retriedThenAcknowledged: [...sent.acked.values()].filter((message) => message.attempts > 1).length,
        refused: sent.refused,
        gaveUp: sent.gaveUp,
        failedAttempts: sent.failedAttempts,
      },
      emails: checked.emails,
      lostEmailIds: checked.lostEmailIds,
      healthy: { ...checked.healthy, drainSeconds },
      flaky: {
        ...checked.flaky,
        pendingAtEnd,
        answered500: flakyCount.failed,
      },
      reads: readFigures,
      rawCheck,
      memory: { firstMb: rss[0]!, maxMb: Math.max(...rss), lastMb: rss.at(-1)! },
      disk: {
        blobsPeakMb: Math.max(...samples.map((entry) => entry.blobsMb)),
        blobsEndMb: mb([...present.values()].reduce((sum, size) => sum + size, 0)),
        segmentsWritten: segments.size,
        segmentsRemoved: removed.length,
        reclaimedMb: mb(removed.reduce((sum, [, size]) => sum + size, 0)),
        databaseStartMb: samples[0]!.databaseMb,
        databasePeakMb: Math.max(...samples.map((entry) => entry.databaseMb)),
        databaseEndMb: samples.at(-1)!.databaseMb,
        ...(sqliteFreeShare === undefined ? {} : { sqliteFreeShare }),
      },
      perMinute: perMinuteOf(samples, checked.latencyP99ByMinute),
    };
  } catch (error) {
    if (unexpectedExits.length === 0) throw error;
    throw new Error(`${(error as Error).message}; Mailroom ended unexpectedly: ${unexpectedExits.join('; ')}`);
  } finally {
    ending = true;
    if (mailroom && mailroom.child.exitCode === null) await mailroom.stop('SIGKILL');
    await database.close();
    await healthy.stop();
    await flaky.stop();
    await installation.remove();
    if (schema && options.databaseUrl) {
      const client = new pg.Client({ connectionString: options.databaseUrl });
      await client.connect();
      await client.query(`drop schema if exists "${schema}" cascade`);
      await client.end();
    }
    await dns.close();
  }
}

export function formatSoak(result: SoakResult): string {
  const { messages, emails, healthy, flaky, disk } = result;
  const summary = [
    ['what', 'figure'],
    [
      'load',
      `${result.minutes} min at ${result.achievedRatePerSecond}/s (asked ${result.ratePerSecond}/s), kill -9 at ` +
        `${result.crash.atSeconds} s, serving again after ${result.crash.restartSeconds} s; ` +
        `${result.unexpectedExits.length} unexpected exits`,
    ],
    [
      'messages',
      `${messages.sent} sent, ${messages.acknowledged} acknowledged (${messages.retriedThenAcknowledged} after a ` +
        `retry), ${messages.refused} refused, ${messages.gaveUp} given up; failed attempts ` +
        `${JSON.stringify(messages.failedAttempts)}`,
    ],
    [
      'emails',
      `${emails.acknowledged} acknowledged: ${emails.stored} stored (${emails.agedNotYetExpired} aged, not yet ` +
        `expired), ${emails.expired} expired, LOST ${emails.lost}; ${emails.storedUnacknowledged} stored unacknowledged`,
    ],
    [
      'healthy receiver',
      `${healthy.delivered}/${healthy.expected} delivered (drained ${healthy.drainSeconds} s after the load), ` +
        `p50 ${healthy.latencyP50Ms} ms, p99 ${healthy.latencyP99Ms} ms; ` +
        `duplicates: ${healthy.duplicatesAfterCrash} after the crash, ${healthy.duplicatesOtherwise} otherwise ` +
        `(${healthy.duplicatesStoredTwice} stored twice)`,
    ],
    [
      'flaky receiver',
      `${flaky.delivered}/${flaky.expected} delivered, ${flaky.answered500} answers 500; ` +
        `${flaky.expected - flaky.delivered - flaky.pendingAtEnd} ran out of retries, ${flaky.pendingAtEnd} still retrying`,
    ],
    [
      'raw read back',
      `${result.rawCheck.intact}/${result.rawCheck.checked} intact (all around the kill, 1,000 others)` +
        (result.rawCheck.failures.length > 0 ? `; failed: ${result.rawCheck.failures.join(', ')}` : ''),
    ],
    [
      'disk',
      `blobs peak ${disk.blobsPeakMb} MB, end ${disk.blobsEndMb} MB; ${disk.segmentsRemoved} of ` +
        `${disk.segmentsWritten} segments removed (${disk.reclaimedMb} MB reclaimed); database ` +
        `${disk.databaseStartMb} -> peak ${disk.databasePeakMb} -> end ${disk.databaseEndMb} MB` +
        (disk.sqliteFreeShare === undefined ? '' : `, ${Math.round(disk.sqliteFreeShare * 100)}% free pages`),
    ],
  ];
  const reads = [
    ['read', 'requests', 'errors', 'unavailable', 'p50 ms', 'p99 ms'],
    ...READ_KINDS.map((kind) => {
      const entry = result.reads[kind];
      return [kind, entry.requests, entry.errors, entry.unavailable, entry.p50Ms, entry.p99Ms].map(String);
    }),
  ];
  const minutes = [
    ['minute', 'RSS MB', 'blobs MB', 'database MB', 'pending deliveries', 'healthy p99 ms', 'load average'],
    ...result.perMinute.map((entry) =>
      [
        entry.minute,
        entry.rssMinMb === null ? '-' : `${entry.rssMinMb}-${entry.rssMaxMb}`,
        entry.blobsMb,
        entry.databaseMb,
        entry.pendingDeliveries ?? '-',
        entry.healthyP99Ms ?? '-',
        entry.loadAverage,
      ].map(String),
    ),
  ];
  return [`soak, ${result.database}`, ...table(summary), '', ...table(reads), '', ...table(minutes)].join('\n');
}

if (import.meta.main) {
  const result = await runSoak({
    minutes: Number(process.env.SOAK_MINUTES ?? 30),
    ratePerSecond: Number(process.env.SOAK_RATE ?? 30),
    databaseUrl: process.env.BENCH_DATABASE_URL ?? process.env.TEST_DATABASE_URL,
  });
  process.stdout.write(`${formatSoak(result)}\n${JSON.stringify(result)}\n`);
}
