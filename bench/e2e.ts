/**
 * End-to-end delivery latency: the time from the SMTP 250 reply to the webhook request arriving at a loopback
 * receiver, with Mailroom running as its own process (`src/main.ts`), as in production. Three phases:
 *   - warm-up: messages at the steady rate for a few seconds, reported on their own: the client opens its
 *     connections here (each waits out smtp-server's 100 ms early-talker pause before its greeting, so the first
 *     messages reach Mailroom in a clump, not at the rate) and Mailroom's code runs for the first time;
 *   - steady: messages at a fixed rate (default 100/s), latency p50/p99;
 *   - burst: 5,000 messages as fast as the SMTP clients go, then the time until the last webhook arrives, and a
 *     check that no job is left pending or processing.
 * `npm run bench` runs it on SQLite and, given BENCH_DATABASE_URL, on PostgreSQL (a schema of its own, dropped after).
 * The webhook can arrive before the client has read the 250 (the worker is woken on commit, before the reply is
 * written), so a latency can be slightly negative; it is reported as measured.
 */
import { randomBytes } from 'node:crypto';
import nodemailer from 'nodemailer';
import pg from 'pg';
import { startMailroom } from '../test/delivery/processes.ts';
import { startDnsServer } from '../test/helpers/dns-server.ts';
import { createVerifiedDomain } from '../test/helpers/domains.ts';
import type { ApiClient } from '../test/helpers/http.ts';
import { createInstallation } from '../test/helpers/process.ts';
import { startWebhookReceiver } from '../test/helpers/webhook-receiver.ts';
import { table } from './table.ts';

export interface E2eOptions {
  rate: number;
  warmupSeconds: number;
  steadySeconds: number;
  burst: number;
  /** SMTP connections used by the client. */
  connections: number;
  /** PostgreSQL server to run on (in a schema of its own); SQLite without it. */
  databaseUrl?: string;
  /** Extra environment for the Mailroom process. */
  env?: Record<string, string>;
}

export interface LatencySummary {
  messages: number;
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
}

export interface E2eResult {
  database: 'sqlite' | 'postgres';
  warmup: LatencySummary & { ratePerSecond: number };
  steady: LatencySummary & { ratePerSecond: number };
  burst: LatencySummary & { sendSeconds: number; drainSeconds: number; leftPending: number };
}

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

/**
 * Deliveries still pending or processing once their attempts have had time to be recorded: the last webhooks arrive
 * before their attempts commit, so this waits (at most 10 s) for the count to reach 0 and reports what is left.
 */
async function unfinishedAfterRecording(api: ApiClient): Promise<number> {
  const deadline = performance.now() + 10_000;
  for (;;) {
    const totals = await Promise.all(
      ['pending', 'processing'].map(async (status) => {
        const list = await api.get(`/api/v2/deliveries?status=${status}&limit=1`);
        return Number(list.body.pagination.total);
      }),
    );
    const unfinished = totals[0]! + totals[1]!;
    if (unfinished === 0 || performance.now() > deadline) return unfinished;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

function summarize(latencies: number[]): LatencySummary {
  const sorted = [...latencies].sort((a, b) => a - b);
  const round = (value: number) => Math.round(value * 10) / 10;
  return {
    messages: sorted.length,
    p50Ms: round(percentile(sorted, 50)),
    p99Ms: round(percentile(sorted, 99)),
    maxMs: round(sorted.at(-1) ?? Number.NaN),
  };
}

const now = () => performance.timeOrigin + performance.now();

export async function runE2e(options: E2eOptions): Promise<E2eResult> {
  const apiKey = `mr_bench_${randomBytes(16).toString('hex')}`;
  const schema = options.databaseUrl ? `bench_${randomBytes(4).toString('hex')}` : undefined;
  const dns = await startDnsServer();
  const receiver = await startWebhookReceiver();
  const installation = await createInstallation({
    MAILROOM_API_KEY: apiKey,
    DNS_SERVERS: dns.address,
    LOG_LEVEL: 'error',
    // Every client connection comes from loopback.
    SMTP_MAX_CONNECTIONS_PER_IP: String(options.connections),
    ...options.env,
    // The production default pool size; the test helper's small pool would make PostgreSQL the bottleneck.
    ...(options.databaseUrl
      ? { DATABASE_URL: options.databaseUrl, DATABASE_SCHEMA: schema!, DATABASE_POOL_SIZE: '10' }
      : {}),
  });
  const mailroom = await startMailroom(installation.env, apiKey);
  const transport = nodemailer.createTransport({
    host: '127.0.0.1',
    port: mailroom.smtpPort,
    pool: true,
    maxConnections: options.connections,
    maxMessages: Number.POSITIVE_INFINITY,
    ignoreTLS: true,
  });
  try {
    const { id: domainId } = await createVerifiedDomain(mailroom.api, dns, 'bench.test');
    const endpoint = await mailroom.api.post('/api/v2/endpoints', {
      name: 'Bench receiver',
      type: 'webhook',
      config: { url: receiver.url },
    });
    await mailroom.api.post('/api/v2/email-addresses', {
      address: 'inbox@bench.test',
      domainId,
      endpointId: endpoint.body.id,
    });

    const acceptedAt = new Map<string, number>();
    async function send(index: number): Promise<void> {
      const info = await transport.sendMail({
        from: 'load@sender.test',
        to: 'inbox@bench.test',
        subject: `bench ${index}`,
        text: `message ${index}`,
      });
      const emailId = /queued as .*?(email_\w+)/.exec(String(info.response))?.[1];
      if (!emailId) throw new Error(`no email id in ${info.response}`);
      acceptedAt.set(emailId, now());
    }
    function latencies(from: number, to?: number): number[] {
      const result: number[] = [];
      for (const request of receiver.requests.slice(from, to)) {
        const accepted = acceptedAt.get(String(request.headers['x-email-id']));
        if (accepted !== undefined) result.push(request.receivedAt - accepted);
      }
      return result;
    }

    /** Sends messages `from` .. `from + count` at the rate, each without waiting for the previous one. */
    async function sendAtRate(from: number, count: number): Promise<LatencySummary & { ratePerSecond: number }> {
      const interval = 1000 / options.rate;
      const started = now();
      const sends: Promise<void>[] = [];
      for (let i = 0; i < count; i++) {
        const wait = started + i * interval - now();
        if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
        sends.push(send(from + i));
      }
      await Promise.all(sends);
      await receiver.waitForRequests(from + count, 60_000);
      return { ...summarize(latencies(from, from + count)), ratePerSecond: options.rate };
    }
    const warmupCount = Math.round(options.rate * options.warmupSeconds);
    const steadyCount = Math.round(options.rate * options.steadySeconds);
    const warmup = await sendAtRate(0, warmupCount);
    const steady = await sendAtRate(warmupCount, steadyCount);
    const burstFrom = warmupCount + steadyCount;

    // Burst: everything at once through the connection pool.
    const burstStart = now();
    await Promise.all(Array.from({ length: options.burst }, (_, i) => send(burstFrom + i)));
    const sent = now();
    await receiver.waitForRequests(burstFrom + options.burst, 300_000);
    const drained = now();
    const burst = {
      ...summarize(latencies(burstFrom)),
      sendSeconds: Math.round((sent - burstStart) / 10) / 100,
      drainSeconds: Math.round((drained - burstStart) / 10) / 100,
      leftPending: await unfinishedAfterRecording(mailroom.api),
    };
    return { database: options.databaseUrl ? 'postgres' : 'sqlite', warmup, steady, burst };
  } finally {
    transport.close();
    await mailroom.stop();
    await receiver.close();
    await dns.close();
    await installation.remove();
    if (schema && options.databaseUrl) {
      const client = new pg.Client({ connectionString: options.databaseUrl });
      await client.connect();
      await client.query(`drop schema if exists "${schema}" cascade`);
      await client.end();
    }
  }
}

export function formatE2e(result: E2eResult): string {
  const rows = [
    ['phase', 'messages', 'p50 ms', 'p99 ms', 'max ms', 'notes'],
    [
      `warm-up ${result.warmup.ratePerSecond}/s`,
      String(result.warmup.messages),
      String(result.warmup.p50Ms),
      String(result.warmup.p99Ms),
      String(result.warmup.maxMs),
      'connections opened, code run for the first time',
    ],
    [
      `steady ${result.steady.ratePerSecond}/s`,
      String(result.steady.messages),
      String(result.steady.p50Ms),
      String(result.steady.p99Ms),
      String(result.steady.maxMs),
      '',
    ],
    [
      'burst',
      String(result.burst.messages),
      String(result.burst.p50Ms),
      String(result.burst.p99Ms),
      String(result.burst.maxMs),
      `sent in ${result.burst.sendSeconds}s, all delivered after ${result.burst.drainSeconds}s, left pending: ${result.burst.leftPending}`,
    ],
  ];
  return [`e2e (SMTP 250 -> webhook received), ${result.database}`, ...table(rows)].join('\n');
}

if (import.meta.main) {
  const result = await runE2e({
    rate: Number(process.env.BENCH_E2E_RATE ?? 100),
    warmupSeconds: Number(process.env.BENCH_E2E_WARMUP_SECONDS ?? 2),
    steadySeconds: Number(process.env.BENCH_E2E_SECONDS ?? 10),
    burst: Number(process.env.BENCH_E2E_BURST ?? 5000),
    connections: Number(process.env.BENCH_E2E_CONNECTIONS ?? 20),
    databaseUrl: process.env.BENCH_DATABASE_URL,
  });
  process.stdout.write(`${formatE2e(result)}\n${JSON.stringify(result)}\n`);
}
