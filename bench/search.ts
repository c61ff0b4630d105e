/**
 * Search at scale: generates N received emails straight into the database (a bounded, seeded generator and batched
 * inserts, so the search index triggers or generated column do their real work), then times 10 representative
 * searches through the mail service and the list endpoint over loopback HTTP, and reports the database size.
 *   SEARCH_MESSAGES=1000000 (default)   how many emails to generate
 *   SEARCH_KEEP=1                       keep the loaded database for the next run with SEARCH_KEEP=1, which reuses it
 *                                       (pending migrations apply to it) when it holds SEARCH_MESSAGES emails, and
 *                                       otherwise loads it again. At most one is kept per database: the SQLite file
 *                                       in $TMPDIR/mailroom-search-bench-kept, the PostgreSQL schema bench_search_kept.
 *                                       A run without SEARCH_KEEP drops the kept one first, so it leaves nothing
 *                                       behind. A reused database reports the load time as 0.
 * With BENCH=console the same run also times the console's first inbox page in Chromium (see bench/console.ts).
 */
import { createHash, randomBytes } from 'node:crypto';
import { mkdir, mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'kysely';
import pg from 'pg';
import { type App, createApp } from '../src/app.ts';
import { loadConfig } from '../src/config/index.ts';
import type { EmailsTable } from '../src/db/index.ts';
import type { MailFilter } from '../src/mail/index.ts';
import { catchUpSearchIndex } from '../src/search/index.ts';
import { table } from './table.ts';

export interface QueryTiming {
  name: string;
  /** `total` of the answer, with `+` when it was capped (more matched). */
  total: string;
  /** The first 8 hex digits of a hash of the first page's ids, to compare the databases. */
  page: string;
  p50Ms: number;
  p95Ms: number;
}

export interface SearchBenchResult {
  database: 'sqlite' | 'postgres';
  messages: number;
  /** 0 when a kept database was reused (SEARCH_KEEP). */
  loadSeconds: number;
  databaseMegabytes: number;
  queries: QueryTiming[];
  endpoint: QueryTiming[];
  /** The plan of the rare-word search, to show the index at this size. */
  plan: string[];
}

const BATCH = 500;
const RUNS = 40;
const WARM_UPS = 3;
const DAY = 86_400_000;

/** mulberry32: a small seeded generator, so every run (and both databases) get the same mail. */
function random(seed: number) {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const SYLLABLES = [
  'ka',
  'lo',
  'mi',
  'ren',
  'tus',
  'va',
  'del',
  'or',
  'sin',
  'pa',
  'quo',
  'bex',
  'tri',
  'mon',
  'zel',
  'fa',
];
/** 4,096 made-up words, drawn with a Zipf-like skew so some are common and most are rare. */
const VOCABULARY = Array.from({ length: 4096 }, (_, i) =>
  [i & 15, (i >> 4) & 15, (i >> 8) & 15].map((s) => SYLLABLES[s]).join(''),
);
const FIRST = ['Alice', 'Bob', 'Carol', 'Dave', 'Erin', 'Frank', 'Grace', 'Heidi', 'Ivan', 'Judy', 'Mallory', 'Oscar'];
const LAST = ['Smith', 'Jones', 'Garcia', 'Müller', 'Rossi', 'Dubois', 'Kowalski', 'Tanaka', 'Silva', 'Novak'];
/** Words with fixed frequencies, for searches whose result sizes are known. */
const SUBJECT_TOPICS: Array<[string, number]> = [
  ['Invoice overdue', 0.01],
  ['Meeting notes', 0.1],
  ['Shipping confirmation', 0.03],
  ['Quarterly report', 0.005],
];
const RARE_WORD = 'zephyrine';
const RECIPIENTS = ['support', 'sales', 'billing', 'info', 'jobs', 'press', 'team', 'hello'];
const DOMAINS = ['alpha.bench', 'beta.bench', 'gamma.bench'];

function pick<T>(next: () => number, list: readonly T[]): T {
  return list[Math.floor(next() * list.length)]!;
}

function zipfWord(next: () => number): string {
  return VOCABULARY[Math.floor(VOCABULARY.length * next() ** 3)]!;
}

function words(next: () => number, count: number): string {
  return Array.from({ length: count }, () => zipfWord(next)).join(' ');
}

function generatedId(i: number): string {
  return `email_bench${String(i).padStart(10, '0')}`;
}

/** Email `i` of `total`: received in the year before `now`, oldest first. */
function generateEmail(
  i: number,
  total: number,
  now: number,
  accountId: string,
  domainIds: string[],
): Omit<EmailsTable, 'id'> & { id: string } {
  const next = random(i + 1);
  const first = pick(next, FIRST);
  const last = pick(next, LAST);
  const senderDomain = `${pick(next, VOCABULARY)}.example`;
  const fromAddress = `${first.toLowerCase()}.${last.toLowerCase().replace('ü', 'u')}${i % 997}@${senderDomain}`;
  const domainIndex = Math.floor(next() * DOMAINS.length);
  const recipient = `${pick(next, RECIPIENTS)}@${DOMAINS[domainIndex]}`;
  let subject = words(next, 3 + Math.floor(next() * 5));
  for (const [topic, frequency] of SUBJECT_TOPICS) if (next() < frequency) subject = `${topic} ${subject}`;
  if (next() < 0.3) subject = `Re: ${subject}`;
  let body = words(next, 40 + Math.floor(next() * 80));
  if (next() < 0.0002) body = `${body} ${RARE_WORD}`;
  const attachmentCount = next() < 0.1 ? 1 + Math.floor(next() * 3) : 0;
  const receivedAt = new Date(now - 365 * DAY + Math.floor((i / total) * 365 * DAY)).toISOString();
  const isRead = next() < 0.6;
  const isArchived = next() < 0.05;
  const addresses = (address: string, name: string | null) =>
    JSON.stringify({ text: name ? `${name} <${address}>` : address, addresses: [{ address, name }] });
  return {
    id: generatedId(i),
    account_id: accountId,
    domain_id: domainIds[domainIndex]!,
    address_id: null,
    recipient,
    mail_from: fromAddress,
    helo: 'mx.example',
    client_ip: '192.0.2.1',
    message_id: `<bench-${i}@${senderDomain}>`,
    subject,
    from_address: fromAddress,
    from_name: `${first} ${last}`,
    from_json: addresses(fromAddress, `${first} ${last}`),
    to_json: addresses(recipient, null),
    cc_json: null,
    bcc_json: null,
    reply_to_json: null,
    sent_date: receivedAt,
    in_reply_to: null,
    references_json: '[]',
    priority: null,
    text_body: body,
    html_body: null,
    headers_json: '{}',
    attachments_json: JSON.stringify(
      Array.from({ length: attachmentCount }, (_, n) => ({
        filename: `file${n}.pdf`,
        contentType: 'application/pdf',
        size: 1000,
        contentId: null,
        contentDisposition: 'attachment',
      })),
    ),
    attachment_count: attachmentCount,
    parse_success: 1,
    parse_error: null,
    raw_blob_key: `raw/bench/${i}.eml`,
    raw_size: 2000,
    raw_sha256: '0'.repeat(64),
    spf: 'PASS',
    dkim: 'PASS',
    dmarc: 'PASS',
    arc: 'NONE',
    spam: 'DISABLED',
    virus: 'DISABLED',
    auth_results: null,
    thread_id: null,
    thread_position: null,
    is_read: isRead ? 1 : 0,
    read_at: isRead ? receivedAt : null,
    is_archived: isArchived ? 1 : 0,
    archived_at: isArchived ? receivedAt : null,
    processing_ms: 5,
    received_at: receivedAt,
    created_at: receivedAt,
    updated_at: receivedAt,
    rule_matches_json: null,
  };
}

export function percentile(sorted: number[], p: number): number {
  return Math.round(sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]! * 10) / 10;
}

interface Answer {
  total: number;
  totalIsExact: boolean;
  ids: string[];
}

async function time(name: string, run: () => Promise<Answer>): Promise<QueryTiming> {
  let answer: Answer = { total: 0, totalIsExact: true, ids: [] };
  for (let i = 0; i < WARM_UPS; i++) answer = await run();
  const samples: number[] = [];
  for (let i = 0; i < RUNS; i++) {
    const start = performance.now();
    await run();
    samples.push(performance.now() - start);
  }
  samples.sort((a, b) => a - b);
  return {
    name,
    total: `${answer.total}${answer.totalIsExact ? '' : '+'}`,
    page: createHash('sha256').update(answer.ids.join(',')).digest('hex').slice(0, 8),
    p50Ms: percentile(samples, 50),
    p95Ms: percentile(samples, 95),
  };
}

async function databaseMegabytes(app: App, dataDir: string): Promise<number> {
  if (app.database.kind === 'sqlite') {
    let bytes = 0;
    // The main database and the search database (see src/search/sqlite-search-index.ts), each with its WAL.
    for (const file of [
      'mailroom.sqlite',
      'mailroom.sqlite-wal',
      'mailroom-search.sqlite',
      'mailroom-search.sqlite-wal',
    ]) {
      bytes += await stat(join(dataDir, file)).then(
        (s) => s.size,
        () => 0,
      );
    }
    return Math.round(bytes / 1024 / 1024);
  }
  const { rows } = await sql<{ bytes: string }>`
    select sum(pg_total_relation_size(c.oid)) as bytes from pg_class c
    join pg_namespace n on n.oid = c.relnamespace
    where n.nspname = current_schema() and c.relkind in ('r', 'm')`.execute(app.database.db);
  return Math.round(Number(rows[0]!.bytes) / 1024 / 1024);
}

const KEPT_DIR = join(tmpdir(), 'mailroom-search-bench-kept');
const KEPT_SCHEMA = 'bench_search_kept';

async function dropSchema(databaseUrl: string, schema: string): Promise<void> {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    await client.query(`drop schema if exists "${schema}" cascade`);
  } finally {
    await client.end();
  }
}

/** Drops what a run with SEARCH_KEEP left for this database. */
async function dropKept(databaseUrl: string | undefined): Promise<void> {
  if (databaseUrl) await dropSchema(databaseUrl, KEPT_SCHEMA);
  else await rm(KEPT_DIR, { recursive: true, force: true });
}

async function openApp(dataDir: string, apiKey: string, databaseUrl?: string, schema?: string): Promise<App> {
  const app = await createApp(
    loadConfig({
      PORT: '0',
      HOST: '127.0.0.1',
      SMTP_PORT: '0',
      SMTP_HOST: '127.0.0.1',
      DATA_DIR: dataDir,
      MAILROOM_API_KEY: apiKey,
      MX_HOST: 'mx.bench.test',
      LOG_LEVEL: 'warn',
      SQLITE_SYNCHRONOUS: 'NORMAL',
      ...(databaseUrl ? { DATABASE_URL: databaseUrl, DATABASE_SCHEMA: schema! } : {}),
    }),
  );
  await app.accounts.ensureKey('default', apiKey);
  return app;
}

/** The `now` a kept database was generated with: email 0 was received a year before it. */
async function keptNow(app: App, messages: number): Promise<number | undefined> {
  const { db } = app.database;
  const counted = await db
    .selectFrom('emails')
    .select((eb) => eb.fn.countAll().as('total'))
    .executeTakeFirstOrThrow();
  if (Number(counted.total) !== messages) return undefined;
  const first = await db.selectFrom('emails').select('received_at').where('id', '=', generatedId(0)).executeTakeFirst();
  return first && Date.parse(first.received_at) + 365 * DAY;
}

export async function runSearchBench(options: {
  databaseUrl?: string;
  messages?: number;
  /** More timings against the loaded server, shown after the endpoint's (the console's page load). */
  timeServer?: (httpUrl: string, apiKey: string) => Promise<QueryTiming[]>;
}): Promise<SearchBenchResult> {
  const messages = options.messages ?? Number(process.env.SEARCH_MESSAGES ?? 1_000_000);
  const keep = process.env.SEARCH_KEEP === '1';
  const { databaseUrl } = options;
  if (!keep) await dropKept(databaseUrl);
  const dataDir = keep && !databaseUrl ? KEPT_DIR : await mkdtemp(join(tmpdir(), 'mailroom-search-bench-'));
  await mkdir(dataDir, { recursive: true });
  const schema = databaseUrl ? (keep ? KEPT_SCHEMA : `bench_search_${randomBytes(4).toString('hex')}`) : undefined;
  const apiKey = `mr_bench_${randomBytes(16).toString('hex')}`;
  let app = await openApp(dataDir, apiKey, databaseUrl, schema);
  const reusedNow = keep ? await keptNow(app, messages) : undefined;
  if (keep && reusedNow === undefined) {
    await app.close();
    await dropKept(databaseUrl);
    await mkdir(dataDir, { recursive: true });
    app = await openApp(dataDir, apiKey, databaseUrl, schema);
  }
  try {
    const { httpUrl } = await app.start();
    const { db } = app.database;
    const account = await db
      .selectFrom('accounts')
      .select('id')
      .where('name', '=', 'default')
      .executeTakeFirstOrThrow();
    const now = reusedNow ?? Date.now();
    const domainIds = DOMAINS.map((_, i) => `dom_bench${i}`);
    let loadSeconds = 0;
    if (reusedNow === undefined) {
      await db
        .insertInto('domains')
        .values(
          DOMAINS.map((domain, i) => ({
            id: domainIds[i]!,
            account_id: account.id,
            domain,
            status: 'verified' as const,
            verification_token: null,
            parent_domain_id: null,
            can_receive_emails: 1 as const,
            has_mx_records: 1 as const,
            domain_provider: null,
            provider_confidence: null,
            last_dns_check: null,
            is_catch_all_enabled: 0 as const,
            catch_all_endpoint_id: null,
            receive_dmarc_emails: 0 as const,
            include_subdomains: 0 as const,
            verified_at: null,
            created_at: new Date(now).toISOString(),
            updated_at: new Date(now).toISOString(),
          })),
        )
        .execute();
      const loadStart = performance.now();
      for (let start = 0; start < messages; start += BATCH) {
        const rows = [];
        for (let i = start; i < Math.min(messages, start + BATCH); i++) {
          rows.push(generateEmail(i, messages, now, account.id, domainIds));
        }
        await db.insertInto('emails').values(rows).execute();
      }
      // What autovacuum leaves a settled table with: statistics and a visibility map (index-only counts need it).
      // The checkpoint writes out the load now, as hours of normal operation would have, rather than while queries
      // are timed.
      if (app.database.kind === 'postgres') {
        await sql`vacuum analyze emails`.execute(db);
        await sql`checkpoint`.execute(db);
      } else {
        // The search indexer would have indexed the emails as they arrived (see src/search/sqlite-search-index.ts).
        await catchUpSearchIndex(db);
        await sql`pragma optimize`.execute(db);
      }
      loadSeconds = Math.round((performance.now() - loadStart) / 100) / 10;
    }

    const page = { limit: 50, offset: 0 };
    const recent = new Date(now - 30 * DAY).toISOString().slice(0, 10);
    const searches: Array<[string, MailFilter]> = [
      ['rare word in bodies', { search: RARE_WORD }],
      ['word in 1% of subjects', { search: 'overdue' }],
      ['word in 10% of subjects', { search: 'meeting' }],
      [
        'from: one sender address',
        { search: `from:${generateEmail(4242, messages, now, account.id, domainIds).from_address}` },
      ],
      ['to: one recipient', { search: 'to:press@beta.bench' }],
      ['subject: quoted phrase', { search: 'subject:"quarterly report"' }],
      ['word has:attachment', { search: 'shipping has:attachment' }],
      ['is:unread word', { search: 'is:unread overdue' }],
      [`word after:${recent}`, { search: `meeting after:${recent}` }],
      ['prefix word -"phrase"', { search: 'invo -"re"' }],
    ];
    const queries: QueryTiming[] = [];
    for (const [name, filter] of searches) {
      queries.push(
        await time(name, async () => {
          const list = await app.mail.list(account.id, filter, page);
          return { ...list, ids: list.emails.map((email) => email.id) };
        }),
      );
    }
    const endpoint: QueryTiming[] = [];
    for (const [name, query] of [
      ['GET /api/v2/mail', ''],
      ['GET /api/v2/mail?offset=5000', 'offset=5000'],
      ['GET /api/v2/mail?domain=beta.bench', 'domain=beta.bench'],
      ['GET /api/v2/mail?search=overdue', 'search=overdue'],
      ['GET /api/v2/mail?emailAddress=press@beta.bench', 'emailAddress=press%40beta.bench'],
    ] as const) {
      endpoint.push(
        await time(name, async () => {
          const response = await fetch(`${httpUrl}/api/v2/mail?${query}`, {
            headers: { authorization: `Bearer ${apiKey}` },
          });
          const body = (await response.json()) as {
            emails: Array<{ id: string }>;
            pagination: { total: number; totalIsExact: boolean };
          };
          if (response.status !== 200) throw new Error(`${name}: ${response.status} ${JSON.stringify(body)}`);
          return { ...body.pagination, ids: body.emails.map((email) => email.id) };
        }),
      );
    }
    if (options.timeServer) endpoint.push(...(await options.timeServer(httpUrl, apiKey)));
    return {
      database: app.database.kind,
      messages,
      loadSeconds,
      databaseMegabytes: await databaseMegabytes(app, dataDir),
      queries,
      endpoint,
      plan: await app.mail.explainList(account.id, { search: RARE_WORD }),
    };
  } finally {
    await app.close();
    if (dataDir !== KEPT_DIR) await rm(dataDir, { recursive: true, force: true });
    if (databaseUrl && schema !== KEPT_SCHEMA) await dropSchema(databaseUrl, schema!);
  }
}

export function formatSearch(result: SearchBenchResult): string {
  const rows = [['query', 'total', 'page', 'p50 ms', 'p95 ms']];
  for (const timing of [...result.queries, ...result.endpoint]) {
    rows.push([timing.name, timing.total, timing.page, String(timing.p50Ms), String(timing.p95Ms)]);
  }
  return [
    `search, ${result.database}: ${result.messages} emails ${result.loadSeconds > 0 ? `loaded in ${result.loadSeconds} s` : 'in the kept database'}, database ${result.databaseMegabytes} MB`,
    ...table(rows),
    `plan (rare word): ${result.plan.join(' | ')}`,
  ].join('\n');
}
