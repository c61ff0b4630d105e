/**
 * Ingest throughput and latency: 10 KB messages over 1, 10 and 50 loopback connections into Mailroom running as its
 * own process (`src/main.ts`, the full pipeline: blob fsync, parse, SPF/DKIM/DMARC/ARC through a loopback DNS
 * server, one durable commit), and the same load against a minimal discard smtp-server (the protocol ceiling), once
 * with each load client (see smtp-load.ts): how much of the machine the client takes moves the ratio between the two.
 * Each routing (see ROUTINGS) is a recipient address of its own on the same Mailroom: `store` only stores the mail,
 * `webhook` also routes it to a webhook endpoint on a loopback receiver answering 200 (bench/webhook-counter.ts), so
 * the delivery worker runs during ingest; after each of its trials the bench waits (bounded) until every accepted
 * message's webhook has arrived, and reports delivered/expected, duplicates and the time to drain.
 * Each sender mix (see senders.ts) runs every level again: all unsigned from one sender, or half DKIM-signed.
 * Each level also reports the server process's CPU time per message (Linux /proc; for `webhook` it includes the
 * deliveries, read once they have drained), with a PostgreSQL server on this machine its processes' as well, and
 * Mailroom's peak RSS during the trial: throughput swings with whatever else runs on the machine, CPU time per
 * message much less, so it is the figure to compare changes by. And where each message's time to its 250 went, by
 * Mailroom's own stage histogram (see StageTimes).
 */
import { execFileSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import { urlHost } from '../src/core/index.ts';
import { WAL_CHECKPOINT_THREAD_NAME } from '../src/db/index.ts';
import { INGEST_STAGES, INGEST_THREAD_NAMES } from '../src/ingest/index.ts';
import { SEARCH_INDEXER_THREAD_NAME } from '../src/search/index.ts';
import { startMailroom } from '../test/delivery/processes.ts';
import { startDnsServer } from '../test/helpers/dns-server.ts';
import { createVerifiedDomain } from '../test/helpers/domains.ts';
import { createInstallation } from '../test/helpers/process.ts';
import { type PrometheusExposition, parsePrometheusText } from '../test/helpers/prometheus.ts';
import { prepareSenders, SENDER_MIXES, type SenderMix, type Senders } from './senders.ts';
import { LOAD_CLIENTS, type LoadClient, type LoadResult, runLoad } from './smtp-load.ts';
import { table } from './table.ts';

export interface IngestLevel {
  connections: number;
  messages: number;
  maxSeconds: number;
}

export const DEFAULT_LEVELS: IngestLevel[] = [
  { connections: 1, messages: 1500, maxSeconds: 15 },
  { connections: 10, messages: 6000, maxSeconds: 15 },
  { connections: 50, messages: 10000, maxSeconds: 15 },
];

/** How the webhooks of a routed trial arrived: distinct webhook-ids against messages accepted. */
export interface WebhookDrain {
  delivered: number;
  expected: number;
  /** Requests beyond the first for one webhook-id (at-least-once retries). */
  duplicates: number;
  /** From the last 250 to the last expected webhook (or to the bound, when some never came). */
  drainSeconds: number;
}

/** A level's load result with the server process's CPU time (all its threads) per accepted message. */
export interface MeasuredLevel extends LoadResult {
  serverCpuMsPerMessage: number;
  /** The load client's CPU time (this process) per accepted message. */
  clientCpuMsPerMessage: number;
  /** The same CPU time by thread group (see THREAD_GROUPS). */
  serverCpuMsPerMessageByThread: Record<ThreadGroup, number>;
  /**
   * Mailroom on a PostgreSQL server of this machine: the CPU time of all its processes (backends, WAL writer,
   * checkpointer, autovacuum) per accepted message, over the same span as the server's.
   */
  databaseCpuMsPerMessage?: number;
  /** The server process's peak resident memory during the trial (VmHWM, reset before it), in MB. */
  peakRssMb: number;
  /** Routed trials only: the middle trial's drain, and `all` summed over every trial (drainSeconds: the longest). */
  webhooks?: WebhookDrain & { all: WebhookDrain };
  /** Routed trials only: msg/s against the store-only address's in the same round, the middle of the rounds. */
  ofStore?: number;
  /** Mailroom only: where its ingest time went, by stage (see StageTimes). */
  stages?: StageTimes;
  /** Every trial of the level, in the order run; the other figures are those of the middle pair's (see measure). */
  trials: Array<Pick<LoadResult, 'messagesPerSecond' | 'p99Ms'>>;
}

/**
 * Which of the server's threads a thread is, by its operating-system name: the event loop, ingest's analysis
 * worker(s) and writer, SQLite's WAL checkpointer and search indexer, V8's platform threads (mostly garbage
 * collection), libuv's pool (file I/O), and the rest.
 */
const THREAD_GROUPS = {
  main: (name: string) => name === 'node-MainThread',
  analysis: (name: string) => name === INGEST_THREAD_NAMES.analysis,
  writer: (name: string) => name === INGEST_THREAD_NAMES.writer,
  checkpoint: (name: string) => name === WAL_CHECKPOINT_THREAD_NAME,
  search: (name: string) => name === SEARCH_INDEXER_THREAD_NAME,
  v8: (name: string) => name.startsWith('node-V8'),
  libuv: (name: string) => name.startsWith('libuv'),
} as const;
type ThreadGroup = keyof typeof THREAD_GROUPS | 'other';

/**
 * Mailroom's own account of a trial's ingest time, by stage (its `mailroom_ingest_stage_duration_seconds`, read
 * before and after the trial): each stage's mean, and the upper bound of the histogram bucket its 99th percentile
 * falls in. Blob and analysis run at once, then rules and write.
 */
export type StageTimes = Record<(typeof INGEST_STAGES)[number], { meanMs: number; p99AtMostMs: number }>;

const STAGE_METRIC = 'mailroom_ingest_stage_duration_seconds';

function stageTimes(before: PrometheusExposition, after: PrometheusExposition): StageTimes {
  const grew = (name: string, labels: Record<string, string>) =>
    (after.value(name, labels) ?? 0) - (before.value(name, labels) ?? 0);
  return Object.fromEntries(
    INGEST_STAGES.map((stage) => {
      const count = grew(`${STAGE_METRIC}_count`, { stage });
      const buckets = after.samples
        .filter((sample) => sample.name === `${STAGE_METRIC}_bucket` && sample.labels.stage === stage)
        .map(({ labels }) => ({ le: Number(labels.le), count: grew(`${STAGE_METRIC}_bucket`, labels) }));
      const p99 = buckets.find((bucket) => bucket.count >= 0.99 * count)?.le ?? Number.POSITIVE_INFINITY;
      const meanMs = count > 0 ? (grew(`${STAGE_METRIC}_sum`, { stage }) * 1000) / count : 0;
      return [stage, { meanMs: Math.round(meanMs * 100) / 100, p99AtMostMs: p99 * 1000 }];
    }),
  ) as StageTimes;
}

/** What the bench's recipient addresses do with their mail (see the header comment). */
export const ROUTINGS = ['store', 'webhook'] as const;
export type Routing = (typeof ROUTINGS)[number];

export interface IngestBenchResult {
  database: 'sqlite' | 'postgres';
  /** Per load client and sender mix, the same levels against Mailroom (per routing) and the discard server. */
  clients: Array<{
    client: LoadClient;
    senders: SenderMix;
    mailroom: Partial<Record<Routing, MeasuredLevel[]>>;
    discard: MeasuredLevel[];
  }>;
}

const RECIPIENTS: Record<Routing, string> = { store: 'load@bench.test', webhook: 'routed@bench.test' };
/** How long a routed trial waits for its webhooks after the last 250. */
const DRAIN_LIMIT_MS = 120_000;
/**
 * Sent before a client's measured levels, to a server that has just started: V8 compiles a fresh process's hot code
 * on background threads, which on 2 cores take CPU from everything else for the first tens of thousands of
 * messages. Started fresh and loaded at 50 connections, 10,000 messages at a time (nodemailer client), Mailroom's
 * compiler and GC threads took 0.121, 0.084 and then 0.013-0.018 ms per message, at 1,805, 1,950 and then
 * 1,913-2,082 messages/s. A warm-up of 300 messages left that compiling to the levels measured first.
 */
const WARM_UP: IngestLevel = { connections: 50, messages: 20_000, maxSeconds: 20 };

/**
 * Starts a bench helper (`discard-server.ts`, `webhook-counter.ts`) as its own process, with `env` added to this
 * one's, once it prints its port.
 */
export async function startHelper(script: string, env: Record<string, string> = {}) {
  const child = spawn(process.execPath, [join(import.meta.dirname, script)], {
    stdio: 'pipe',
    env: { ...process.env, ...env },
  });
  const port = await new Promise<number>((resolve, reject) => {
    let out = '';
    child.stdout.on('data', (chunk) => {
      out += chunk;
      const match = /listening on (\d+)/.exec(out);
      if (match) resolve(Number(match[1]));
    });
    child.once('exit', (code) => reject(new Error(`${script} exited with ${code}`)));
  });
  return {
    port,
    pid: child.pid!,
    stop: () => new Promise<void>((resolve) => child.once('exit', () => resolve()).kill('SIGTERM')),
  };
}

const CLOCK_TICKS_PER_SECOND = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;

/**
 * CPU time a process or one of its threads has used, in ms, from its /proc stat file. It moves less than throughput
 * when something else shares the machine, so it tells better whether a change made the work cheaper.
 */
function cpuMs(statPath: string): number {
  const stat = readFileSync(statPath, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / CLOCK_TICKS_PER_SECOND;
}

/** CPU time by thread group, in ms. A thread that ended between two readings drops out of its group. */
function threadCpuMs(pid: number): Record<ThreadGroup, number> {
  const groups: Record<ThreadGroup, number> = {
    main: 0,
    analysis: 0,
    writer: 0,
    checkpoint: 0,
    search: 0,
    v8: 0,
    libuv: 0,
    other: 0,
  };
  for (const task of readdirSync(`/proc/${pid}/task`)) {
    try {
      const name = readFileSync(`/proc/${pid}/task/${task}/comm`, 'utf8').trim();
      const group = (Object.keys(THREAD_GROUPS) as Array<keyof typeof THREAD_GROUPS>).find((key) =>
        THREAD_GROUPS[key](name),
      );
      groups[group ?? 'other'] += cpuMs(`/proc/${pid}/task/${task}/stat`);
    } catch {
      // The thread ended while being read.
    }
  }
  return groups;
}

/** CPU time, in ms, of every process named `postgres`: a PostgreSQL server's postmaster and the processes it forks. */
function postgresCpuMs(): number {
  let total = 0;
  for (const pid of readdirSync('/proc')) {
    if (!/^\d+$/.test(pid)) continue;
    try {
      if (readFileSync(`/proc/${pid}/comm`, 'utf8').trim() === 'postgres') total += cpuMs(`/proc/${pid}/stat`);
    } catch {
      // The process ended while being read.
    }
  }
  return total;
}

/** Whether a database URL names a server on this machine (loopback or a Unix socket), whose processes /proc shows. */
function isLocalServer(databaseUrl: string): boolean {
  const host = urlHost(new URL(databaseUrl));
  return host === '' || host === 'localhost' || host === '::1' || host.startsWith('127.');
}

/** The webhook counter's tallies (see webhook-counter.ts). */
async function webhookCount(port: number): Promise<{ requests: number; unique: number }> {
  const response = await fetch(`http://127.0.0.1:${port}/count`);
  return (await response.json()) as { requests: number; unique: number };
}

/** Peak resident memory since the last reset, in MB; the reset (Linux 4.0+) starts the next trial's peak afresh. */
function peakRssMb(pid: number, reset = false): number {
  if (reset) writeFileSync(`/proc/${pid}/clear_refs`, '5');
  const kb = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
  return Math.round(Number(kb) / 1024);
}

/** A server under load: its SMTP port, the process whose CPU is read, and what it is sent. */
interface Target extends Senders {
  port: number;
  pid: number;
  to: string;
  /** The webhook counter's port, when this target's mail is routed to it. */
  webhookPort?: number;
  /** Mailroom's metrics, read before and after each trial. */
  scrape?: () => Promise<PrometheusExposition>;
  /** Mailroom on a PostgreSQL server of this machine, whose CPU time is read with Mailroom's. */
  localPostgres?: boolean;
}

/** Waits (bounded) until `expected` more distinct webhooks than `before` have arrived. */
async function drainWebhooks(
  port: number,
  before: { requests: number; unique: number },
  expected: number,
): Promise<WebhookDrain> {
  const started = performance.now();
  let count = await webhookCount(port);
  while (count.unique - before.unique < expected && performance.now() - started < DRAIN_LIMIT_MS) {
    await new Promise((resolve) => setTimeout(resolve, 20));
    count = await webhookCount(port);
  }
  const delivered = count.unique - before.unique;
  return {
    delivered,
    expected,
    duplicates: count.requests - before.requests - delivered,
    drainSeconds: Math.round(performance.now() - started) / 1000,
  };
}

type Trial = Omit<MeasuredLevel, 'trials' | 'ofStore' | 'webhooks'> & { webhooks?: WebhookDrain };

/** One trial of a level against one server, with that server's CPU and the client's. */
async function runTrial(client: LoadClient, target: Target, level: IngestLevel): Promise<Trial> {
  const perMessage = (ms: number, accepted: number) => Math.round((ms / Math.max(1, accepted)) * 1000) / 1000;
  const webhooksBefore = target.webhookPort ? await webhookCount(target.webhookPort) : undefined;
  const metricsBefore = await target.scrape?.();
  peakRssMb(target.pid, true);
  const before = cpuMs(`/proc/${target.pid}/stat`);
  const threadsBefore = threadCpuMs(target.pid);
  const databaseBefore = target.localPostgres ? postgresCpuMs() : undefined;
  const clientBefore = process.cpuUsage();
  const result = await runLoad({
    client,
    port: target.port,
    from: target.from,
    to: target.to,
    message: target.message,
    ...level,
  });
  const clientUsage = process.cpuUsage(clientBefore);
  const webhooks =
    target.webhookPort && webhooksBefore
      ? await drainWebhooks(target.webhookPort, webhooksBefore, result.accepted)
      : undefined;
  const threadsAfter = threadCpuMs(target.pid);
  const databaseMs = databaseBefore === undefined ? undefined : postgresCpuMs() - databaseBefore;
  const metricsAfter = await target.scrape?.();
  const byThread = Object.fromEntries(
    Object.entries(threadsAfter).map(([group, ms]) => [
      group,
      perMessage(ms - threadsBefore[group as ThreadGroup], result.accepted),
    ]),
  ) as Record<ThreadGroup, number>;
  return {
    ...result,
    serverCpuMsPerMessage: perMessage(cpuMs(`/proc/${target.pid}/stat`) - before, result.accepted),
    serverCpuMsPerMessageByThread: byThread,
    ...(databaseMs === undefined ? {} : { databaseCpuMsPerMessage: perMessage(databaseMs, result.accepted) }),
    clientCpuMsPerMessage: perMessage((clientUsage.user + clientUsage.system) / 1000, result.accepted),
    peakRssMb: peakRssMb(target.pid),
    ...(webhooks ? { webhooks } : {}),
    ...(metricsBefore && metricsAfter ? { stages: stageTimes(metricsBefore, metricsAfter) } : {}),
  };
}

/** The servers each level is measured against: Mailroom once per routing, and the discard server. */
type Side = Routing | 'discard';

const middle = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

/**
 * Runs each level `trials` times against every side, in rounds: one trial of each side right beside the others (in
 * an order rotated every round, so that none always goes first), and keeps for each Mailroom side the round whose
 * ratio to the discard server is the middle one. On a shared 2-core machine one trial of a few seconds swings by 10%
 * or more either way, and whatever else runs on the machine slows the servers alike only while they run at the same
 * time: rates measured minutes apart, each server's trials in a block of their own, gave ratios that moved by a
 * third between runs. Every trial's msg/s and p99 are kept too.
 */
async function measure(
  client: LoadClient,
  targets: Partial<Record<Side, Target>>,
  levels: IngestLevel[],
  trials: number,
): Promise<Partial<Record<Side, MeasuredLevel[]>>> {
  const sides = Object.keys(targets) as Side[];
  for (const side of sides) {
    const target = targets[side]!;
    const before = target.webhookPort ? await webhookCount(target.webhookPort) : undefined;
    const warmed = await runLoad({
      client,
      port: target.port,
      from: target.from,
      to: target.to,
      message: target.message,
      ...WARM_UP,
    });
    if (target.webhookPort && before) await drainWebhooks(target.webhookPort, before, warmed.accepted);
  }
  const measured: Partial<Record<Side, MeasuredLevel[]>> = Object.fromEntries(sides.map((side) => [side, []]));
  for (const level of levels) {
    const rounds: Array<Record<Side, Trial>> = [];
    for (let trial = 0; trial < trials; trial++) {
      const shift = trial % sides.length;
      const order = [...sides.slice(shift), ...sides.slice(0, shift)];
      const round: Partial<Record<Side, Trial>> = {};
      for (const side of order) round[side] = await runTrial(client, targets[side]!, level);
      rounds.push(round as Record<Side, Trial>);
    }
    for (const side of sides) {
      const ratio = (round: (typeof rounds)[number]) =>
        round[side].messagesPerSecond / Math.max(1, (round.discard ?? round[side]).messagesPerSecond);
      const chosen = [...rounds].sort((a, b) => ratio(a) - ratio(b))[Math.floor(rounds.length / 2)]!;
      const drains = rounds.flatMap((round) => (round[side].webhooks ? [round[side].webhooks] : []));
      const webhooks = chosen[side].webhooks && {
        ...chosen[side].webhooks,
        all: {
          delivered: drains.reduce((sum, drain) => sum + drain.delivered, 0),
          expected: drains.reduce((sum, drain) => sum + drain.expected, 0),
          duplicates: drains.reduce((sum, drain) => sum + drain.duplicates, 0),
          drainSeconds: Math.max(...drains.map((drain) => drain.drainSeconds)),
        },
      };
      const { webhooks: _chosenDrain, ...chosenTrial } = chosen[side];
      measured[side]!.push({
        ...chosenTrial,
        ...(webhooks ? { webhooks } : {}),
        ...(side !== 'store' && side !== 'discard' && targets.store
          ? {
              ofStore:
                Math.round(
                  100 *
                    middle(
                      rounds.map((round) => round[side].messagesPerSecond / Math.max(1, round.store.messagesPerSecond)),
                    ),
                ) / 100,
            }
          : {}),
        trials: rounds.map((round) => ({
          messagesPerSecond: round[side].messagesPerSecond,
          p99Ms: round[side].p99Ms,
        })),
      });
    }
  }
  return measured;
}

export async function runIngestBench(options: {
  databaseUrl?: string;
  levels?: IngestLevel[];
  /** Trials per level (see measure); default 3. */
  trials?: number;
  /** Load clients to measure with; default all (see smtp-load.ts). */
  clients?: LoadClient[];
  /** Routings to measure Mailroom with; default all (see ROUTINGS). */
  routings?: Routing[];
  /** Sender mixes to measure with; default all (see senders.ts). */
  senders?: SenderMix[];
  /** Extra environment for the Mailroom process, e.g. INGEST_WORKERS. */
  env?: Record<string, string>;
}): Promise<IngestBenchResult> {
  const levels = options.levels ?? DEFAULT_LEVELS;
  const trials = options.trials ?? 3;
  const clients = options.clients ?? LOAD_CLIENTS;
  const routings = options.routings ?? ROUTINGS;
  const senderMixes = options.senders ?? SENDER_MIXES;
  const apiKey = `mr_bench_${randomBytes(16).toString('hex')}`;
  const schema = options.databaseUrl ? `bench_${randomBytes(4).toString('hex')}` : undefined;
  const dns = await startDnsServer();
  const mixes: Array<[SenderMix, (to: string) => Senders]> = [];
  for (const mix of senderMixes) mixes.push([mix, await prepareSenders(mix, dns)]);
  const installation = await createInstallation({
    DNS_SERVERS: dns.address,
    MAILROOM_API_KEY: apiKey,
    LOG_LEVEL: 'warn',
    // Every load connection comes from loopback.
    SMTP_MAX_CONNECTIONS_PER_IP: String(Math.max(...levels.map((level) => level.connections))),
    ...options.env,
    ...(options.databaseUrl
      ? { DATABASE_URL: options.databaseUrl, DATABASE_SCHEMA: schema!, DATABASE_POOL_SIZE: '10' }
      : {}),
  });
  const mailroom = await startMailroom(installation.env, apiKey);
  let discard: Awaited<ReturnType<typeof startHelper>> | undefined;
  let receiver: Awaited<ReturnType<typeof startHelper>> | undefined;
  try {
    discard = await startHelper('discard-server.ts');
    receiver = await startHelper('webhook-counter.ts');
    const domain = await createVerifiedDomain(mailroom.api, dns, 'bench.test');
    const endpoint = await mailroom.api.post('/api/v2/endpoints', {
      name: 'Bench receiver',
      type: 'webhook',
      config: { url: `http://127.0.0.1:${receiver.port}/hook` },
    });
    if (endpoint.status !== 201) throw new Error(`endpoint: ${JSON.stringify(endpoint.body)}`);
    for (const routing of routings) {
      const address = await mailroom.api.post('/api/v2/email-addresses', {
        address: RECIPIENTS[routing],
        domainId: domain.id,
        ...(routing === 'webhook' ? { endpointId: endpoint.body.id } : {}),
      });
      if (address.status !== 201) throw new Error(`address: ${JSON.stringify(address.body)}`);
    }
    const localPostgres = options.databaseUrl !== undefined && isLocalServer(options.databaseUrl);
    const measured = [];
    for (const client of clients) {
      for (const [mix, sendersTo] of mixes) {
        const targets: Partial<Record<Side, Target>> = {};
        for (const routing of routings) {
          targets[routing] = {
            port: mailroom.smtpPort,
            pid: mailroom.child.pid!,
            to: RECIPIENTS[routing],
            ...sendersTo(RECIPIENTS[routing]),
            ...(routing === 'webhook' ? { webhookPort: receiver.port } : {}),
            scrape: async () => parsePrometheusText(String((await mailroom.api.get('/metrics')).body)),
            localPostgres,
          };
        }
        targets.discard = {
          port: discard.port,
          pid: discard.pid,
          to: RECIPIENTS.store,
          ...sendersTo(RECIPIENTS.store),
        };
        const { discard: ceiling, ...mailroomSides } = await measure(client, targets, levels, trials);
        measured.push({ client, senders: mix, mailroom: mailroomSides, discard: ceiling! });
      }
    }
    await mailroom.stop('SIGTERM');
    return { database: options.databaseUrl ? 'postgres' : 'sqlite', clients: measured };
  } finally {
    await discard?.stop();
    if (mailroom.child.exitCode === null) await mailroom.stop('SIGKILL');
    await receiver?.stop();
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

export function formatIngest(result: IngestBenchResult): string {
  return result.clients
    .flatMap(({ client, senders, mailroom, discard }) =>
      (Object.keys(mailroom) as Routing[]).map((routing) =>
        formatLevels(result.database, client, senders, routing, mailroom[routing]!, discard),
      ),
    )
    .join('\n\n');
}

function formatLevels(
  database: string,
  client: LoadClient,
  senders: SenderMix,
  routing: Routing,
  mailroom: MeasuredLevel[],
  discard: MeasuredLevel[],
): string {
  const routed = mailroom.some((level) => level.webhooks);
  const rows = [
    [
      'connections',
      'msg/s',
      'p50 ms',
      'p99 ms',
      'accepted',
      'cpu ms/msg',
      'client cpu ms/msg',
      'peak RSS MB',
      'discard msg/s',
      'discard p99 ms',
      'ratio',
      ...(routed ? ['of store', 'webhooks (all trials)', 'dup', 'drain s'] : []),
      'trials msg/s',
      'trials p99 ms',
    ],
  ];
  mailroom.forEach((level, i) => {
    const ceiling = discard[i]!;
    rows.push([
      String(level.connections),
      String(level.messagesPerSecond),
      String(level.p50Ms),
      String(level.p99Ms),
      `${level.accepted}/${level.sent}`,
      `${level.serverCpuMsPerMessage} (${ceiling.serverCpuMsPerMessage})`,
      `${level.clientCpuMsPerMessage} (${ceiling.clientCpuMsPerMessage})`,
      String(level.peakRssMb),
      String(ceiling.messagesPerSecond),
      String(ceiling.p99Ms),
      `${Math.round((100 * level.messagesPerSecond) / ceiling.messagesPerSecond)}%`,
      ...(routed
        ? [
            level.ofStore === undefined ? '' : `${Math.round(100 * level.ofStore)}%`,
            `${level.webhooks!.all.delivered}/${level.webhooks!.all.expected}`,
            String(level.webhooks!.all.duplicates),
            `${level.webhooks!.drainSeconds} (max ${level.webhooks!.all.drainSeconds})`,
          ]
        : []),
      level.trials.map((trial) => trial.messagesPerSecond).join(' '),
      level.trials.map((trial) => trial.p99Ms).join(' '),
    ]);
  });
  const groups = Object.keys(mailroom[0]!.serverCpuMsPerMessageByThread) as ThreadGroup[];
  const databaseCpu = mailroom.some((level) => level.databaseCpuMsPerMessage !== undefined);
  const byThread = [
    ['connections', ...groups, ...(databaseCpu ? ['postgres'] : [])],
    ...mailroom.map((level) => [
      String(level.connections),
      ...groups.map((group) => String(level.serverCpuMsPerMessageByThread[group])),
      ...(databaseCpu ? [String(level.databaseCpuMsPerMessage ?? '')] : []),
    ]),
  ];
  const stages = [
    ['connections', ...INGEST_STAGES],
    ...mailroom.map((level) => [
      String(level.connections),
      ...INGEST_STAGES.map((stage) => {
        const times = level.stages?.[stage];
        return times ? `${times.meanMs} (<=${times.p99AtMostMs})` : '';
      }),
    ]),
  ];
  const recipient = routing === 'webhook' ? 'address routed to a loopback webhook answering 200' : 'store-only address';
  const sent = senders === 'mixed' ? 'half of them DKIM-signed by 1,000 sender domains' : 'unsigned, from one sender';
  return [
    `ingest (10 KB messages ${sent}, end of DATA -> 250), ${database}, ${recipient}, ${client} client; the middle of ${mailroom[0]!.trials.length} trial rounds by ratio; cpu ms/msg: against Mailroom (against the discard server)${routed ? ', with the deliveries; of store: msg/s against the store-only address in the same round (middle round); drain s: after the last 250 (middle trial, longest)' : ''}`,
    ...table(rows),
    `Mailroom cpu ms/msg by thread${databaseCpu ? ", and the PostgreSQL server's processes" : ''}`,
    ...table(byThread),
    "Mailroom's ingest by stage, ms: mean (the p99's bucket bound); blob and analysis at once, then rules and write",
    ...table(stages),
  ].join('\n');
}
