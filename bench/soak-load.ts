/**
 * The soak's load (see soak.ts): its mail, a paced SMTP sender that retries what was not answered 250, and a reader
 * that searches and reads over the API. Each is bounded in count and time, and talks to loopback only.
 */
import { randomBytes } from 'node:crypto';
import nodemailer from 'nodemailer';
import type { ApiClient } from '../test/helpers/http.ts';

export const SOAK_DOMAIN = 'soak.test';
/** Every message goes to the healthy receiver's address; every third one also to the flaky receiver's. */
export const HEALTHY_ADDRESS = `inbox@${SOAK_DOMAIN}`;
export const FLAKY_ADDRESS = `flaky@${SOAK_DOMAIN}`;

const WORDS = (
  'invoice shipment meeting quarterly budget forecast contract renewal warehouse delivery customer support ' +
  'ticket escalation payroll holiday schedule migration database outage postmortem release candidate roadmap ' +
  'hiring interview onboarding laptop expense receipt travel booking conference keynote workshop agenda minutes ' +
  'newsletter subscription discount coupon order refund tracking parcel courier pallet inventory supplier audit ' +
  'compliance policy security incident password rotation certificate backup restore archive'
).split(' ');

/** A small deterministic generator, so message n has the same words on every attempt. */
function wordsFor(n: number, count: number): string[] {
  let state = (n * 2654435761) >>> 0;
  const out: string[] = [];
  for (let i = 0; i < count; i++) {
    state = (state * 1664525 + 1013904223) >>> 0;
    out.push(WORDS[state % WORDS.length]!);
  }
  return out;
}

export function randomWord(): string {
  return WORDS[Math.floor(Math.random() * WORDS.length)]!;
}

export interface SoakMessage {
  messageId: string;
  recipients: string[];
  raw: Buffer;
}

/** Wraps words into lines of about 72 characters. */
function lines(words: string[]): string {
  const out: string[] = [];
  let line = '';
  for (const word of words) {
    if (line.length + word.length > 72) {
      out.push(line);
      line = '';
    }
    line += line ? ` ${word}` : word;
  }
  return [...out, line].join('\r\n');
}

/**
 * Message n: 10 KB on average (6-14 KB of text), mixed: three in five plain text, one in four text and HTML, the
 * rest with a 2 KB attachment. Unique Message-ID per run; the same bytes on every attempt, so that Mailroom's
 * duplicate check recognises a retry of a message it stored without answering.
 */
export function soakMessage(n: number, runId: string): SoakMessage {
  const messageId = `soak-${n}-${runId}@load.soak`;
  const recipients = n % 3 === 0 ? [HEALTHY_ADDRESS, FLAKY_ADDRESS] : [HEALTHY_ADDRESS];
  const text = lines(wordsFor(n, Math.round((6000 + (n % 9) * 1000) / 9)));
  const headers = [
    `From: Sender ${n % 50} <sender${n % 50}@senders.soak>`,
    `To: ${recipients.join(', ')}`,
    `Subject: soak ${n} ${wordsFor(n + 1, 3).join(' ')}`,
    `Message-ID: <${messageId}>`,
    `Date: ${new Date().toUTCString()}`,
    'MIME-Version: 1.0',
  ];
  const kind = n % 20;
  let body: string;
  if (kind < 12) {
    body = [...headers, 'Content-Type: text/plain; charset=utf-8', '', text].join('\r\n');
  } else {
    const boundary = `b${n}`;
    const second =
      kind < 17
        ? ['Content-Type: text/html; charset=utf-8', '', `<p>${text.replaceAll('\r\n', '</p>\r\n<p>')}</p>`]
        : [
            `Content-Type: application/octet-stream; name="report-${n}.bin"`,
            'Content-Transfer-Encoding: base64',
            `Content-Disposition: attachment; filename="report-${n}.bin"`,
            '',
            (
              Buffer.from(wordsFor(n + 2, 300).join(' '))
                .toString('base64')
                .slice(0, 2736)
                .match(/.{1,76}/g) ?? []
            ).join('\r\n'),
          ];
    body = [
      ...headers,
      `Content-Type: multipart/${kind < 17 ? 'alternative' : 'mixed'}; boundary="${boundary}"`,
      '',
      `--${boundary}`,
      'Content-Type: text/plain; charset=utf-8',
      '',
      text,
      `--${boundary}`,
      ...second,
      `--${boundary}--`,
    ].join('\r\n');
  }
  return { messageId, recipients, raw: Buffer.from(`${body}\r\n`) };
}

/** A message answered 250: the email ids of the reply, when, after how many attempts. */
export interface AckedMessage {
  n: number;
  emailIds: string[];
  ackedAt: number;
  attempts: number;
  flaky: boolean;
}

export interface SendResult {
  /** Messages the client started sending (each once, retries not counted). */
  sent: number;
  acked: Map<string, AckedMessage>;
  /** Failed attempts by cause: the reply code, or `connection` when the connection failed or closed unanswered. */
  failedAttempts: Record<string, number>;
  /** Messages refused for good (5xx) or still unanswered when the retry time ran out. */
  refused: number;
  gaveUp: number;
  ratePerSecond: number;
}

export interface SendOptions {
  port: number;
  ratePerSecond: number;
  seconds: number;
  /** How long after the last message is due a message may still be retried. */
  retrySeconds: number;
  /** Messages under way at most; when reached, the next waits (the achieved rate shows it). */
  maxInFlight: number;
  connections: number;
  runId: string;
  /** Called on each 250. */
  onAck?: (messageId: string, message: AckedMessage) => void;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Sends message 0, 1, 2... at `ratePerSecond` for `seconds`, each retried every second until it is answered 250,
 * refused with a 5xx, or the retry time runs out. Only a 250 counts as acknowledged.
 */
export async function sendPaced(options: SendOptions): Promise<SendResult> {
  const transport = nodemailer.createTransport({
    host: '127.0.0.1',
    port: options.port,
    ignoreTLS: true,
    pool: true,
    maxConnections: options.connections,
    maxMessages: Number.POSITIVE_INFINITY,
    connectionTimeout: 10_000,
    greetingTimeout: 10_000,
    socketTimeout: 60_000,
  });
  const result: SendResult = { sent: 0, acked: new Map(), failedAttempts: {}, refused: 0, gaveUp: 0, ratePerSecond: 0 };
  const started = performance.now();
  const retryUntil = started + (options.seconds + options.retrySeconds) * 1000;
  let inFlight = 0;
  const sends: Promise<void>[] = [];

  async function send(n: number): Promise<void> {
    const message = soakMessage(n, options.runId);
    for (let attempt = 1; ; attempt++) {
      try {
        const info = await transport.sendMail({
          envelope: { from: `bounce${n % 50}@senders.soak`, to: message.recipients },
          raw: message.raw,
        });
        const acked: AckedMessage = {
          n,
          emailIds: [...String(info.response).matchAll(/email_\w+/g)].map((match) => match[0]),
          ackedAt: Date.now(),
          attempts: attempt,
          flaky: message.recipients.length > 1,
        };
        result.acked.set(message.messageId, acked);
        options.onAck?.(message.messageId, acked);
        return;
      } catch (error) {
        const code = (error as { responseCode?: number }).responseCode;
        const cause = code ? String(code) : 'connection';
        result.failedAttempts[cause] = (result.failedAttempts[cause] ?? 0) + 1;
        if (code && code >= 500) {
          result.refused++;
          return;
        }
        if (performance.now() > retryUntil) {
          result.gaveUp++;
          return;
        }
        await sleep(1000);
      }
    }
  }

  const total = Math.round(options.ratePerSecond * options.seconds);
  const deadline = started + options.seconds * 1000;
  for (let n = 0; n < total && performance.now() < deadline; n++) {
    const wait = started + (n * 1000) / options.ratePerSecond - performance.now();
    if (wait > 0) await sleep(wait);
    while (inFlight >= options.maxInFlight && performance.now() < deadline) await sleep(10);
    inFlight++;
    result.sent++;
    sends.push(
      send(n).finally(() => {
        inFlight--;
      }),
    );
  }
  const sendingSeconds = (performance.now() - started) / 1000;
  await Promise.all(sends);
  transport.close();
  result.ratePerSecond = Math.round((result.sent / sendingSeconds) * 10) / 10;
  return result;
}

/** What the reader did with one kind of request. */
export interface ReadStats {
  requests: number;
  /** Answered other than 200 (the process was up). */
  errors: number;
  /** No answer: the connection failed (the process was down). */
  unavailable: number;
  latenciesMs: number[];
}

export const READ_KINDS = ['search', 'list', 'read', 'raw'] as const;
export type ReadKind = (typeof READ_KINDS)[number];

/**
 * Until `stop` resolves, one request every `intervalMs` in turn: a search for a word of the mail, the newest page,
 * and a read of a recently acknowledged email and of its raw message (one not yet aged, so never expired).
 */
export async function readWhile(
  api: ApiClient,
  recentEmailId: () => string | undefined,
  intervalMs: number,
  stop: Promise<void>,
): Promise<Record<ReadKind, ReadStats>> {
  const stats = Object.fromEntries(
    READ_KINDS.map((kind) => [kind, { requests: 0, errors: 0, unavailable: 0, latenciesMs: [] }]),
  ) as unknown as Record<ReadKind, ReadStats>;
  let stopped = false;
  void stop.then(() => {
    stopped = true;
  });
  for (let turn = 0; !stopped; turn++) {
    const kind = READ_KINDS[turn % READ_KINDS.length]!;
    const id = recentEmailId();
    const path =
      kind === 'search'
        ? `/api/v2/mail?search=${randomWord()}&limit=20`
        : kind === 'list'
          ? '/api/v2/mail?limit=50'
          : id
            ? `/api/v2/mail/${id}${kind === 'raw' ? '/raw' : ''}`
            : undefined;
    if (path) {
      const entry = stats[kind];
      entry.requests++;
      const started = performance.now();
      try {
        const response = await api.get(path);
        if (response.status === 200) entry.latenciesMs.push(performance.now() - started);
        else entry.errors++;
      } catch {
        entry.unavailable++;
      }
    }
    await sleep(intervalMs);
  }
  return stats;
}

export function newRunId(): string {
  return randomBytes(4).toString('hex');
}
