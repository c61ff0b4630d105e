import { pipeline, type Readable, Transform } from 'node:stream';

const DAYS = ['Sun', 'Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat'];
const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];

/** RFC 5322 date-time in UTC, e.g. `Sun, 22 Nov 2026 02:01:51 +0000`. */
function rfc5322Date(at: Date): string {
  const pad = (n: number) => String(n).padStart(2, '0');
  return (
    `${DAYS[at.getUTCDay()]}, ${pad(at.getUTCDate())} ${MONTHS[at.getUTCMonth()]} ${at.getUTCFullYear()} ` +
    `${pad(at.getUTCHours())}:${pad(at.getUTCMinutes())}:${pad(at.getUTCSeconds())} +0000`
  );
}

/** Client-supplied names go into a header: keep only printable ASCII so they cannot fold or inject lines. */
function clean(value: string | null | undefined, fallback: string): string {
  const printable = (value ?? '').replace(/[^\x21-\x7e]/g, '').slice(0, 255);
  return printable || fallback;
}

/**
 * The trace header (RFC 5321 §4.4) prepended to every stored message: `Return-Path:`, which final delivery must
 * add, with the reverse-path (`<>` for a bounce; UTF-8 as SMTPUTF8 allows), then our `Received:`.
 */
export function traceHeader(input: {
  /** MAIL FROM's address; empty for the null reverse-path. */
  mailFrom: string | null;
  queueId: string;
  helo: string | null;
  clientHostname: string | null;
  clientIp: string;
  /** The `with` protocol (RFC 5321 §4.4, RFC 3848, RFC 6531 §3.7.3), e.g. `ESMTPS`. */
  protocol: string;
  mxHost: string;
  recipients: string[];
  at: Date;
}): Buffer {
  const ip = `[${clean(input.clientIp, 'unknown')}]`;
  const hostname = clean(input.clientHostname, '');
  const client = hostname && !hostname.startsWith('[') ? `${hostname} ${ip}` : ip;
  const from = `from ${clean(input.helo, 'unknown')} (${client})`;
  const by = `by ${clean(input.mxHost, 'localhost')} (Mailroom) with ${clean(input.protocol, 'ESMTP')} id ${input.queueId}`;
  const forClause = input.recipients.length === 1 ? `\r\n\tfor <${clean(input.recipients[0], 'unknown')}>` : '';
  // smtp-server refuses control characters in addresses; dropped here too (UTF-8 kept), so nothing ends the line early.
  const reversePath = (input.mailFrom ?? '').replace(/[^\x21-\x7e\u00a0-\uffff]|[<>]/g, '').slice(0, 512);
  return Buffer.concat([
    Buffer.from(`Return-Path: <${reversePath}>\r\n`, 'utf8'),
    Buffer.from(`Received: ${from}\r\n\t${by}${forClause};\r\n\t${rfc5322Date(input.at)}\r\n`, 'latin1'),
  ]);
}

/** The `Return-Path:` line that starts the trace header (messages stored by earlier versions have none). */
const RETURN_PATH = /^Return-Path: <[^\r\n]*>\r\n/;

/**
 * The last line of the `Received:` header above: a tab and the date. Its client-supplied names are cleaned of CR and LF, so the first such line ends it, even when
 * the message's own first line starts with whitespace and so would read as a continuation of the header.
 */
const TRACE_END = /\r\n\t[A-Z][a-z]{2}, \d{2} [A-Z][a-z]{2} \d{4} \d{2}:\d{2}:\d{2} \+0000\r\n/;

/** The trace header is well under this (each client-supplied name in it is cut to 255 characters, the path to 512). */
const TRACE_MAX_BYTES = 4096;

/** The length of the stored message's trace header, or null when `head` holds no complete one. */
function traceLength(head: Buffer): number | null {
  const text = head.subarray(0, TRACE_MAX_BYTES).toString('latin1');
  const returnPath = RETURN_PATH.exec(text)?.[0].length ?? 0;
  if (!text.startsWith('Received: ', returnPath)) return null;
  const end = TRACE_END.exec(text);
  return end ? end.index + end[0].length : null;
}

/**
 * A stored message without the trace header Mailroom put before it: exactly the bytes ingest parsed, so that reading
 * its parts again finds what ingest listed. A blob that does not start with a trace header is passed through whole.
 */
export function withoutTraceHeader(stored: Buffer): Buffer;
export function withoutTraceHeader(stored: Readable): Readable;
export function withoutTraceHeader(stored: Buffer | Readable): Buffer | Readable {
  if (Buffer.isBuffer(stored)) return stored.subarray(traceLength(stored) ?? 0);
  let head: Buffer | null = Buffer.alloc(0);
  const message = new Transform({
    transform(chunk: Buffer, _encoding, done) {
      if (head === null) return done(null, chunk);
      head = Buffer.concat([head, chunk]);
      const length = traceLength(head);
      if (length === null && head.length < TRACE_MAX_BYTES) return done();
      const rest = head.subarray(length ?? 0);
      head = null;
      done(null, rest);
    },
    flush(done) {
      done(null, head?.subarray(traceLength(head) ?? 0));
    },
  });
  // Destroying the result (an extraction that has what it wanted) also closes the stored message.
  return pipeline(stored, message, () => {});
}
