/**
 * Ingest throughput and latency: 10 KB messages over 1, 10 and 50 loopback connections into Mailroom running as its
 * own process (`src/main.ts`, the full pipeline: blob fsync, parse, SPF/DKIM/DMARC/ARC through a loopback DNS
 * server, one durable commit), and the same load against a minimal discard smtp-server (the protocol ceiling), once
 * with each load client (see smtp-load.ts): how much of the machine the client takes moves the ratio between the two.
 * The recipient is a store-only address, so no delivery worker competes for the CPU (bench/e2e.ts measures that).
 * Each level also reports the server process's CPU time per message (Linux /proc): throughput swings with whatever
 * else runs on the machine, CPU time per message much less, so it is the figure to compare changes by.
 */
import { execFileSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import { WAL_CHECKPOINT_THREAD_NAME } from '../src/db/index.ts';
import { INGEST_THREAD_NAMES } from '../src/ingest/index.ts';
import { SEARCH_INDEXER_THREAD_NAME } from '../src/search/index.ts';
import { startMailroom } from '../test/delivery/processes.ts';
import { startDnsServer } from '../test/helpers/dns-server.ts';
import { createVerifiedDomain } from '../test/helpers/domains.ts';
import { createInstallation } from '../test/helpers/process.ts';
import { LOAD_CLIENTS, type LoadClient, type LoadResult, runLoad, tenKilobyteMessage } from './smtp-load.ts';
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

/** A level's load result with the server process's CPU time (all its threads) per accepted message. */
export interface MeasuredLevel extends LoadResult {
  serverCpuMsPerMessage: number;
  /** The load client's CPU time (this process) per accepted message. */
  clientCpuMsPerMessage: number;
  /** The same CPU time by thread group (see THREAD_GROUPS). */
  serverCpuMsPerMessageByThread: Record<ThreadGroup, number>;
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

export interface IngestBenchResult {
  database: 'sqlite' | 'postgres';
  /** Per load client, the same levels against Mailroom and against the discard server. */
  clients: Array<{ client: LoadClient; mailroom: MeasuredLevel[]; discard: MeasuredLevel[] }>;
}

const FROM = 'bench@sender.bench';
const TO = 'load@bench.test';
const MESSAGE = tenKilobyteMessage(FROM, TO);
/**
 * Sent before a client's measured levels, to a server that has just started: V8 compiles a fresh process's hot code
 * on background threads, which on 2 cores take CPU from everything else for the first tens of thousands of
 * messages. Started fresh and loaded at 50 connections, 10,000 messages at a time (nodemailer client), Mailroom's
 * compiler and GC threads took 0.121, 0.084 and then 0.013-0.018 ms per message, at 1,805, 1,950 and then
 * 1,913-2,082 messages/s. A warm-up of 300 messages left that compiling to the levels measured first.
 */
const WARM_UP: IngestLevel = { connections: 50, messages: 20_000, maxSeconds: 20 };

async function startDiscardServer() {
  const child = spawn(process.execPath, [join(import.meta.dirname, 'discard-server.ts')], { stdio: 'pipe' });
  const port = await new Promise<number>((resolve, reject) => {
    let out = '';
    child.stdout.on('data', (chunk) => {
      out += chunk;
      const match = /listening on (\d+)/.exec(out);
      if (match) resolve(Number(match[1]));
    });
    child.once('exit', (code) => reject(new Error(`discard server exited with ${code}`)));
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

/** A server under load: its SMTP port and the process whose CPU is read. */
interface Target {
  port: number;
  pid: number;
}

/** The two servers each level is measured against. */
const SIDES = ['mailroom', 'discard'] as const;
type Side = (typeof SIDES)[number];

/** One trial of a level against one server, with that server's CPU and the client's. */
async function runTrial(
  client: LoadClient,
  target: Target,
  level: IngestLevel,
): Promise<Omit<MeasuredLevel, 'trials'>> {
  const perMessage = (ms: number, accepted: number) => Math.round((ms / Math.max(1, accepted)) * 1000) / 1000;
  const before = cpuMs(`/proc/${target.pid}/stat`);
  const threadsBefore = threadCpuMs(target.pid);
  const clientBefore = process.cpuUsage();
  const result = await runLoad({ client, port: target.port, from: FROM, to: TO, message: MESSAGE, ...level });
  const clientUsage = process.cpuUsage(clientBefore);
  const threadsAfter = threadCpuMs(target.pid);
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
    clientCpuMsPerMessage: perMessage((clientUsage.user + clientUsage.system) / 1000, result.accepted),
  };
}

/**
 * Runs each level `trials` times against Mailroom and against the discard server, a trial of one right beside a
 * trial of the other (in alternating order, so that neither always goes first), and keeps the pair whose ratio is
 * the middle one. On a shared 2-core machine one trial of a few seconds swings by 10% or more either way, and
 * whatever else runs on the machine slows both servers alike only while they run at the same time: rates measured
 * minutes apart, each server's trials in a block of their own, gave ratios that moved by a third between runs.
 * Every trial's msg/s and p99 are kept too.
 */
async function measure(
  client: LoadClient,
  targets: Record<Side, Target>,
  levels: IngestLevel[],
  trials: number,
): Promise<Record<Side, MeasuredLevel[]>> {
  for (const side of SIDES) {
    await runLoad({ client, port: targets[side].port, from: FROM, to: TO, message: MESSAGE, ...WARM_UP });
  }
  const measured: Record<Side, MeasuredLevel[]> = { mailroom: [], discard: [] };
  for (const level of levels) {
    const pairs: Array<Record<Side, Omit<MeasuredLevel, 'trials'>>> = [];
    for (let trial = 0; trial < trials; trial++) {
      const order = trial % 2 === 0 ? SIDES : [...SIDES].reverse();
      const pair: Partial<Record<Side, Omit<MeasuredLevel, 'trials'>>> = {};
      for (const side of order) pair[side] = await runTrial(client, targets[side], level);
      pairs.push(pair as Record<Side, Omit<MeasuredLevel, 'trials'>>);
    }
    const ratio = (pair: (typeof pairs)[number]) =>
      pair.mailroom.messagesPerSecond / Math.max(1, pair.discard.messagesPerSecond);
    const middle = [...pairs].sort((a, b) => ratio(a) - ratio(b))[Math.floor(pairs.length / 2)]!;
    for (const side of SIDES) {
      measured[side].push({
        ...middle[side],
        trials: pairs.map((pair) => ({
          messagesPerSecond: pair[side].messagesPerSecond,
          p99Ms: pair[side].p99Ms,
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
  /** Extra environment for the Mailroom process, e.g. INGEST_WORKERS. */
  env?: Record<string, string>;
}): Promise<IngestBenchResult> {
  const levels = options.levels ?? DEFAULT_LEVELS;
  const trials = options.trials ?? 3;
  const clients = options.clients ?? LOAD_CLIENTS;
  const apiKey = `mr_bench_${randomBytes(16).toString('hex')}`;
  const schema = options.databaseUrl ? `bench_${randomBytes(4).toString('hex')}` : undefined;
  const dns = await startDnsServer();
  dns.set('sender.bench', [{ type: 'TXT', data: 'v=spf1 ip4:127.0.0.1 -all' }]);
  dns.set('_dmarc.sender.bench', [{ type: 'TXT', data: 'v=DMARC1; p=none' }]);
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
  let discard: Awaited<ReturnType<typeof startDiscardServer>> | undefined;
  try {
    discard = await startDiscardServer();
    const domain = await createVerifiedDomain(mailroom.api, dns, 'bench.test');
    const address = await mailroom.api.post('/api/v2/email-addresses', { address: TO, domainId: domain.id });
    if (address.status !== 201) throw new Error(`address: ${JSON.stringify(address.body)}`);
    const measured = [];
    for (const client of clients) {
      measured.push({
        client,
        ...(await measure(
          client,
          {
            mailroom: { port: mailroom.smtpPort, pid: mailroom.child.pid! },
            discard: { port: discard.port, pid: discard.pid },
          },
          levels,
          trials,
        )),
      });
    }
    await mailroom.stop('SIGTERM');
    return { database: options.databaseUrl ? 'postgres' : 'sqlite', clients: measured };
  } finally {
    await discard?.stop();
    if (mailroom.child.exitCode === null) await mailroom.stop('SIGKILL');
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
    .map(({ client, mailroom, discard }) => formatClient(result.database, client, mailroom, discard))
    .join('\n\n');
}

function formatClient(
  database: string,
  client: LoadClient,
  mailroom: MeasuredLevel[],
  discard: MeasuredLevel[],
): string {
  const rows = [
    [
      'connections',
      'msg/s',
      'p50 ms',
      'p99 ms',
      'accepted',
      'cpu ms/msg',
      'client cpu ms/msg',
      'discard msg/s',
      'discard p99 ms',
      'ratio',
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
      String(ceiling.messagesPerSecond),
      String(ceiling.p99Ms),
      `${Math.round((100 * level.messagesPerSecond) / ceiling.messagesPerSecond)}%`,
      level.trials.map((trial) => trial.messagesPerSecond).join(' '),
      level.trials.map((trial) => trial.p99Ms).join(' '),
    ]);
  });
  const groups = Object.keys(mailroom[0]!.serverCpuMsPerMessageByThread) as ThreadGroup[];
  const byThread = [
    ['connections', ...groups],
    ...mailroom.map((level) => [
      String(level.connections),
      ...groups.map((group) => String(level.serverCpuMsPerMessageByThread[group])),
    ]),
  ];
  return [
    `ingest (10 KB messages, end of DATA -> 250), ${database}, ${client} client; the middle of ${mailroom[0]!.trials.length} trial pairs by ratio; cpu ms/msg: against Mailroom (against the discard server)`,
    ...table(rows),
    'Mailroom cpu ms/msg by thread',
    ...table(byThread),
  ].join('\n');
}
