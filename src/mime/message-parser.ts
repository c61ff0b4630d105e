import { isUtf8 } from 'node:buffer';
import { type AddressObject, type AttachmentStream, type HeaderLines, MailParser, type MessageText } from 'mailparser';
import { BoundedMailParser, MAX_BODY_CHARS } from './bounded-parser.ts';
import {
  isUndeclaredCharset,
  type TextDecoderFactory,
  UNDECLARED_CHARSET,
  withCharsetFallback,
} from './text-charset.ts';

export interface AddressList {
  text: string;
  addresses: Array<{ name: string | null; address: string | null }>;
}

/** One attachment as stored in `attachments_json`; the list is in MIME order (see extractAttachment). */
export interface AttachmentInfo {
  filename: string | null;
  contentType: string;
  /** Decoded size in bytes. */
  size: number;
  contentId: string | null;
  contentDisposition: string | null;
}

export interface ParsedMessage {
  messageId: string | null;
  subject: string | null;
  from: AddressList | null;
  to: AddressList | null;
  cc: AddressList | null;
  bcc: AddressList | null;
  replyTo: AddressList | null;
  /** The Date header as ISO 8601, or null when absent or unreadable. */
  date: string | null;
  /** In-Reply-To's first id, as shown. */
  inReplyTo: string | null;
  /** Every id In-Reply-To names (RFC 5322 allows several), for threading. */
  inReplyToIds: string[];
  references: string[];
  priority: string | null;
  textBody: string | null;
  htmlBody: string | null;
  /** Lower-case header name to its decoded value, or to every value in order when it repeats. */
  headers: Record<string, string | string[]>;
  attachments: AttachmentInfo[];
  parseSuccess: boolean;
  parseError: string | null;
}

/**
 * The MailParser options ingest and attachment extraction share, so both see the same parts in the same order.
 * Text is not converted to HTML nor HTML to text (the slow, regex-heavy steps on hostile input), and cid: links
 * are left as they are rather than inlined as data: URLs.
 */
export const PARSER_OPTIONS = {
  skipHtmlToText: true,
  skipTextToHtml: true,
  skipTextLinks: true,
  skipImageLinks: true,
  keepDeliveryStatus: true,
} as const;

function addressList(value: AddressObject | AddressObject[] | undefined): AddressList | null {
  if (!value) return null;
  const objects = Array.isArray(value) ? value : [value];
  const addresses: AddressList['addresses'] = [];
  const flatten = (entries: AddressObject['value']) => {
    for (const entry of entries) {
      if (entry.group) flatten(entry.group);
      else addresses.push({ name: entry.name || null, address: entry.address ? entry.address.toLowerCase() : null });
    }
  };
  for (const object of objects) flatten(object.value);
  return { text: objects.map((object) => object.text).join(', '), addresses };
}

function headerValue(line: string): string {
  const colon = line.indexOf(':');
  return (colon >= 0 ? line.slice(colon + 1) : line).replace(/\r?\n[ \t]+/g, ' ').trim();
}

/** Shared: a regular expression literal is a new object each time it runs, and this runs for every header line. */
const EIGHT_BIT = /[\x80-\xff]/;

/**
 * Raw 8-bit header bytes arrive as latin1 text (a character per byte). They read as UTF-8 when they are valid UTF-8
 * (SMTPUTF8 senders), else as latin-1, as MailParser's splitter reads a filename. The headers list, the subject and
 * the names all read them so.
 */
function eightBitHeader(value: string): string {
  if (!EIGHT_BIT.test(value)) return value;
  const bytes = Buffer.from(value, 'latin1');
  return isUtf8(bytes) ? bytes.toString('utf8') : value;
}

/**
 * MailParser reads a header line's bytes as UTF-8 and turns those that are not into U+FFFD (subject, names). It is
 * given the UTF-8 of the text eightBitHeader reads instead (the same bytes when they are UTF-8 already).
 */
function asUtf8Lines(lines: HeaderLines): HeaderLines {
  if (!lines.some((entry) => EIGHT_BIT.test(entry.line))) return lines;
  return lines.map((entry) =>
    EIGHT_BIT.test(entry.line)
      ? { key: entry.key, line: Buffer.from(eightBitHeader(entry.line), 'utf8').toString('latin1') }
      : entry,
  );
}

/** What MailParser's createNode gives: a text part (not an attachment) with a decoder is decoded by its charset. */
interface ParserNode {
  decoder?: unknown;
  isAttachment?: boolean;
  charset?: string;
}

const parserMethods = MailParser.prototype as unknown as {
  getDecoder(): TextDecoderFactory;
  createNode(node: unknown): ParserNode;
};
const { getDecoder, createNode } = parserMethods;

/** MailParser's own header step, which it has no option for how to read 8-bit bytes in. */
const processHeaders = (MailParser.prototype as unknown as { processHeaders(lines: HeaderLines): unknown })
  .processHeaders;

/**
 * A MailParser whose header step reads 8-bit header bytes as the headers list does (asUtf8Lines). A subclass, not a
 * property set on each parser: that changes the parser's shape, which slows every parse and the garbage collector.
 */
class EightBitHeaderParser extends BoundedMailParser {
  /** Text whose charset was guessed (see withCharsetFallback), in the words of parseError. */
  readonly charsetProblems: string[] = [];

  processHeaders(lines: HeaderLines): unknown {
    return processHeaders.call(this, asUtf8Lines(lines));
  }

  /** Called by MailParser's constructor, before this class's fields exist: the problems are read when they occur. */
  getDecoder(): TextDecoderFactory {
    return withCharsetFallback(getDecoder.call(this), (problem) => this.charsetProblems.push(problem));
  }

  createNode(node: unknown): ParserNode {
    const created = createNode.call(this, node);
    if (created.decoder && !created.isAttachment && isUndeclaredCharset(created.charset)) {
      created.charset = UNDECLARED_CHARSET;
    }
    return created;
  }
}

function decodedHeaders(lines: HeaderLines, decode: (value: string) => string): Record<string, string | string[]> {
  // No prototype: a field named `constructor` or `__proto__` is a header like any other, not Object's own member.
  const headers: Record<string, string | string[]> = Object.create(null);
  for (const { key, line } of lines) {
    let value = eightBitHeader(headerValue(line));
    try {
      value = decode(value);
    } catch {}
    const existing = headers[key];
    if (existing === undefined) headers[key] = value;
    else if (Array.isArray(existing)) existing.push(value);
    else headers[key] = [existing, value];
  }
  return headers;
}

/**
 * An id cannot be folded, so one longer than a header line may be (RFC 5322 §2.1.1) is not one. Left out, it also
 * stays clear of PostgreSQL's limit on an index entry (some 2,700 bytes), which would refuse the row.
 */
const MAX_MESSAGE_ID_BYTES = 998;

/**
 * The `<id>`s of a Message-ID, In-Reply-To or References value, without comments and phrases around them (MailParser
 * wraps a whole value that lacks them in `<` and `>`), and without the white space the obsolete syntax allows just
 * inside the brackets (RFC 5322 §4.5.4); `<>` is none. A value with no brackets is split on whitespace. A fragment
 * such as `<` or `<not` is never an id: every message that had it would share it, and so a thread.
 */
function messageIds(value: unknown): string[] {
  const text = Array.isArray(value) ? value.join(' ') : typeof value === 'string' ? value : '';
  const bracketed = text.match(/<[^<>]*>/g);
  const ids = bracketed
    ? bracketed.map((id) => `<${id.slice(1, -1).trim()}>`).filter((id) => id !== '<>')
    : text.split(/\s+/).filter((token) => token !== '' && !/[<>]/.test(token));
  return ids.filter((id) => id.length <= MAX_MESSAGE_ID_BYTES / 3 || Buffer.byteLength(id) <= MAX_MESSAGE_ID_BYTES);
}

/**
 * The Date header as ISO 8601, or null. MailParser reads a Date it cannot parse as the time of parsing, which would
 * pass for the sender's; the header's own text (the last one, as MailParser takes) tells the two apart. A year past
 * 9999 (or before 0) is unreadable too: the API's date-time (RFC 3339) has four-digit years, and refused `+099999-…`.
 */
function sentDate(date: unknown, header: string | string[] | undefined): string | null {
  const text = Array.isArray(header) ? header.at(-1) : header;
  if (!(date instanceof Date) || text === undefined || Number.isNaN(Date.parse(text))) return null;
  const iso = Number.isNaN(date.getTime()) ? '' : date.toISOString();
  return /^\d{4}-/.test(iso) ? iso : null;
}

/** An attachment's type; an empty Content-Type (which MailParser reports as false) reads as a missing one. */
export function attachmentType(part: AttachmentStream): string {
  return part.contentType || 'application/octet-stream';
}

function cap(text: string | undefined): string | null {
  if (text === undefined) return null;
  if (text.length <= MAX_BODY_CHARS) return text;
  // A cut between the two halves of a surrogate pair (an emoji, say) would leave a lone half; it goes before the pair.
  const last = text.charCodeAt(MAX_BODY_CHARS - 1);
  return text.slice(0, last >= 0xd800 && last <= 0xdbff ? MAX_BODY_CHARS - 1 : MAX_BODY_CHARS);
}

/**
 * Parses a raw message in one streaming pass. Attachments are counted and drained, never held. A message MailParser
 * cannot read still yields whatever headers were read, with `parseSuccess: false` and the reason.
 */
export async function parseMessage(raw: readonly Buffer[]): Promise<ParsedMessage> {
  const parser = new EightBitHeaderParser(PARSER_OPTIONS);
  const parsed: ParsedMessage = {
    messageId: null,
    subject: null,
    from: null,
    to: null,
    cc: null,
    bcc: null,
    replyTo: null,
    date: null,
    inReplyTo: null,
    inReplyToIds: [],
    references: [],
    priority: null,
    textBody: null,
    htmlBody: null,
    headers: {},
    attachments: [],
    parseSuccess: true,
    parseError: null,
  };
  let headerMap: Map<string, unknown> | undefined;
  parser.on('headers', (headers) => {
    headerMap = headers as Map<string, unknown>;
  });
  parser.on('headerLines', (lines: HeaderLines) => {
    const decode = (value: string) =>
      (parser as unknown as { libmime: { decodeWords(v: string): string } }).libmime.decodeWords(value);
    parsed.headers = decodedHeaders(lines, decode);
  });

  const done = new Promise<void>((resolve, reject) => {
    parser.on('data', (data: AttachmentStream | MessageText) => {
      if (data.type === 'text') {
        parsed.htmlBody = cap(typeof data.html === 'string' ? data.html : undefined);
        // Without a text part MailParser still reports an empty text; only a real text part counts.
        parsed.textBody = data.text === '' && parsed.htmlBody !== null ? null : cap(data.text);
        return;
      }
      const meta: AttachmentInfo = {
        filename: data.filename ?? null,
        contentType: attachmentType(data),
        size: 0,
        contentId: data.contentId ?? null,
        contentDisposition: data.contentDisposition ?? null,
      };
      parsed.attachments.push(meta);
      data.content.on('data', (chunk: Buffer) => {
        meta.size += chunk.length;
      });
      data.content.on('end', () => data.release());
    });
    parser.on('end', resolve);
    parser.on('error', reject);
  });
  // The chunks are already in memory, so they are written straight in rather than through a Readable and pipe():
  // the parser keeps references to what it has not read yet (no copies), and the stream machinery is spared.
  for (const chunk of raw) parser.write(chunk);
  parser.end();
  try {
    await done;
    const problem = boundaryProblem(raw, headerMap?.get('content-type')) ?? parser.charsetProblems[0];
    if (problem) {
      parsed.parseSuccess = false;
      parsed.parseError = problem;
    }
  } catch (error) {
    parsed.parseSuccess = false;
    parsed.parseError = error instanceof Error ? error.message : String(error);
  }

  if (headerMap) {
    const get = (name: string) => headerMap!.get(name);
    parsed.messageId = messageIds(get('message-id'))[0] ?? null;
    parsed.subject = typeof get('subject') === 'string' ? (get('subject') as string) : null;
    parsed.from = addressList(get('from') as AddressObject | undefined);
    parsed.to = addressList(get('to') as AddressObject | undefined);
    parsed.cc = addressList(get('cc') as AddressObject | undefined);
    parsed.bcc = addressList(get('bcc') as AddressObject | undefined);
    parsed.replyTo = addressList(get('reply-to') as AddressObject | undefined);
    parsed.date = sentDate(get('date'), parsed.headers.date);
    parsed.inReplyToIds = messageIds(get('in-reply-to'));
    parsed.inReplyTo = parsed.inReplyToIds[0] ?? null;
    parsed.references = messageIds(get('references'));
    parsed.priority = typeof get('priority') === 'string' ? (get('priority') as string) : null;
  }
  return withoutNul(parsed);
}

/**
 * PostgreSQL's text cannot hold U+0000, which a message can carry in any decoded field (a raw NUL byte, `=00`, an
 * encoded word): a row with one is refused, and its message would be answered 451 on every retry. Each becomes
 * U+FFFD, on SQLite alike, so that both store the same text; the raw message keeps the original bytes. Objects and
 * arrays are cleaned in place, so that nothing holding one (an attachment's size count) is left with a stale copy.
 */
function withoutNul<T>(value: T): T {
  if (typeof value === 'string') return (value.includes('\u0000') ? value.replaceAll('\u0000', '\ufffd') : value) as T;
  if (value === null || typeof value !== 'object') return value;
  const fields = value as Record<string, unknown>;
  for (const key of Object.keys(fields)) {
    const clean = withoutNul(key);
    const field = withoutNul(fields[key]);
    if (clean !== key) delete fields[key];
    fields[clean] = field;
  }
  return value;
}

/**
 * MailParser reads a multipart message whose boundary never appears, or that ends before its closing boundary, as if
 * nothing were wrong (the parts are silently lost or cut). This looks for the top-level boundary's lines in the raw
 * bytes, so that such a message is stored with `parseSuccess: false` and the reason.
 */
function boundaryProblem(raw: readonly Buffer[], contentType: unknown): string | null {
  const type = contentType as { value?: string; params?: { boundary?: string } } | undefined;
  if (!type?.value?.startsWith('multipart/')) return null;
  const boundary = type.params?.boundary;
  if (!boundary) return `Multipart message has no boundary parameter`;
  const lines = new Set(delimiterLines(raw).map((line) => line.trimEnd()));
  if (!lines.has(boundary) && !lines.has(`${boundary}--`)) return `Multipart boundary "${boundary}" not found`;
  if (!lines.has(`${boundary}--`)) return `Multipart message ends before its closing boundary "${boundary}"`;
  return null;
}

/** What follows `--` on each line that starts with it (the first 200 characters), keeping the last 10,000 or so. */
function delimiterLines(raw: readonly Buffer[]): string[] {
  const seen: string[] = [];
  let tail = '';
  for (const chunk of raw) {
    // latin1 keeps one character per byte, so the text can be searched cheaply.
    const text = tail + chunk.toString('latin1');
    for (const match of text.matchAll(/(?:^|\n)--([^\r\n]{1,200})/g)) seen.push(match[1]!);
    tail = text.slice(-256);
    if (seen.length > 10_000) seen.splice(0, seen.length - 1000);
  }
  return seen;
}
