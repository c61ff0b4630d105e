import { isDeepStrictEqual } from 'node:util';
import { firstCharacters } from '../core/index.ts';
import type { AddressList, StoredEmail } from '../mail/index.ts';
import { sanitizeEmailHtml } from '../mime/index.ts';
import { jsonBytes, jsonPrefix } from './json-size.ts';

/** The stored email fields the `email.received` body is built from. */
export type PayloadEmail = Pick<
  StoredEmail,
  | 'id'
  | 'recipient'
  | 'messageId'
  | 'subject'
  | 'from'
  | 'to'
  | 'cc'
  | 'bcc'
  | 'replyTo'
  | 'sentDate'
  | 'inReplyTo'
  | 'references'
  | 'priority'
  | 'textBody'
  | 'htmlBody'
  | 'headers'
  | 'attachments'
  | 'threadId'
  | 'threadPosition'
  | 'receivedAt'
>;

export interface PayloadEndpoint {
  id: string;
  name: string;
  type: 'webhook' | 'email' | 'email_group';
}

const NO_ADDRESSES = { text: '', addresses: [] };

/** Receivers and proxies commonly cap bodies at 1 MB; the body is trimmed to stay below. */
export const MAX_PAYLOAD_BYTES = 1_000_000;

/**
 * A raw message longer than this is not carried as `parsedData.raw` (it goes as ""): even without its base64 bodies
 * it would rarely fit under MAX_PAYLOAD_BYTES, and reading and scanning it would cost each attempt the more.
 */
export const MAX_RAW_CARRIED_BYTES = 4 * MAX_PAYLOAD_BYTES;

/** What stands in for each base64 body of `parsedData.raw` when the body is too large, as in Inbound's. */
const BINARY_REMOVED = '[binary attachment data removed - use Attachments API]';

export interface BuiltPayload {
  /** The exact JSON text that is sent and signed. */
  body: string;
  /** The fields emptied to stay under MAX_PAYLOAD_BYTES, in the order they were trimmed. */
  trimmed: string[];
}

/**
 * An attachment's `downloadUrl`: `template` with `{emailId}` and `{index}` filled in, the index being the position in
 * parsedData.attachments.
 */
function attachmentDownloadUrl(template: string, emailId: string, index: number): string {
  return template.replace(/\{(emailId|index)\}/g, (_, name) =>
    name === 'emailId' ? encodeURIComponent(emailId) : String(index),
  );
}

/**
 * The one builder of the `email.received` body, for real deliveries and endpoint tests alike, from the stored email
 * and its raw message (`parsedData.raw`, which the `inboundemail` client types as always there). Attachments are not
 * inlined beyond the raw message: each carries a `downloadUrl`. Over 1 MB it is trimmed, see fitUnderLimit.
 */
export function buildEmailReceivedPayload(input: PayloadInput): BuiltPayload {
  const built = fitUnderLimit(emailReceivedPayload(input));
  return input.raw === null ? { ...built, trimmed: ['parsedData.raw', ...built.trimmed] } : built;
}

interface PayloadInput {
  email: PayloadEmail;
  /** The message as received, as text; null when longer than MAX_RAW_CARRIED_BYTES, and then sent as "". */
  raw: string | null;
  /**
   * `sanitizeEmailHtml(email.htmlBody)`, when it was computed already: ingest does it once per message routed to a
   * webhook, off the event loop (see its webhookHtml), and hands it over with the message's fresh jobs.
   */
  sanitizedHtml?: string | undefined;
  endpoint: PayloadEndpoint;
  /** The `downloadUrl` template, see attachmentDownloadUrl. */
  attachmentUrl: string;
  timestamp: Date;
}

function emailReceivedPayload(input: PayloadInput) {
  const { email, endpoint, attachmentUrl } = input;
  // The spec types every field a string, and the clients disagree on what stands for none (null or absent): an
  // unnamed part or one without a Content-ID gets "", as the mail API shows it.
  const attachments = email.attachments.map((attachment, index) => ({
    filename: attachment.filename ?? '',
    contentType: attachment.contentType,
    size: attachment.size,
    contentId: attachment.contentId ?? '',
    contentDisposition: attachment.contentDisposition ?? 'attachment',
    downloadUrl: attachmentDownloadUrl(attachmentUrl, email.id, index),
  }));
  // Where a message lacks them, the spec's strings and address groups are sent empty rather than null, which neither
  // client types (one allows null here, the other a string or an object only); a missing Date is left out.
  const { headers } = email;
  const from = email.from ?? NO_ADDRESSES;
  const to = email.to ?? NO_ADDRESSES;
  const messageId = email.messageId ?? '';
  const subject = email.subject ?? '';
  const parsedData = {
    messageId,
    ...(email.sentDate === null ? {} : { date: email.sentDate }),
    subject,
    from,
    to,
    cc: email.cc,
    bcc: email.bcc,
    replyTo: email.replyTo,
    // Both clients type these two as a string or absent, never null.
    ...(email.inReplyTo === null ? {} : { inReplyTo: email.inReplyTo }),
    references: email.references,
    textBody: email.textBody,
    htmlBody: email.htmlBody,
    raw: input.raw ?? '',
    attachments,
    headers,
    ...(email.priority === null ? {} : { priority: email.priority }),
  };
  const cleanedContent = {
    html:
      email.htmlBody === null || !carriesCleanedHtml(email.htmlBody)
        ? null
        : (input.sanitizedHtml ?? sanitizeEmailHtml(email.htmlBody)),
    text: email.textBody,
    hasHtml: Boolean(email.htmlBody),
    hasText: Boolean(email.textBody),
    attachments,
    headers,
  };
  return {
    event: 'email.received',
    timestamp: input.timestamp.toISOString(),
    email: {
      id: email.id,
      messageId,
      from,
      to,
      recipient: email.recipient,
      subject,
      receivedAt: email.receivedAt,
      threadId: email.threadId,
      threadPosition: email.threadPosition,
      parsedData,
      cleanedContent,
    },
    endpoint: { id: endpoint.id, name: endpoint.name, type: endpoint.type },
  };
}

/**
 * Trims `payload` until its JSON is under MAX_PAYLOAD_BYTES, one step at a time and only while it is over: first the
 * raw message's base64 bodies, then the copies (the header maps, the sanitized HTML, the text and the rest of the raw
 * message), then what only a hostile or broken message makes long
 * (cut to bounds a real one stays within), and last the bodies, cut by just what is still over. The bounded fields
 * take some 600 KB at most, so cutting the bodies always makes it fit. Over the limit, the JSON's size is counted
 * and kept up to date field by field, and the JSON written once, at the end.
 */
function fitUnderLimit(payload: ReturnType<typeof emailReceivedPayload>): BuiltPayload {
  if (stringCharacters(payload) < MAX_PAYLOAD_BYTES) {
    const body = JSON.stringify(payload);
    if (Buffer.byteLength(body) < MAX_PAYLOAD_BYTES) return { body, trimmed: [] };
  }
  const { email } = payload;
  const { parsedData, cleanedContent } = email;
  const trimmed: string[] = [];
  let size = jsonBytes(payload);
  /** `cut(value)`, put in as many places as `fields` names: those go to `trimmed` when it is not the value as it was. */
  const shorten = <T>(fields: string[], value: T, cut: (value: T) => T): T => {
    const shortened = cut(value);
    if (!isDeepStrictEqual(shortened, value)) {
      trimmed.push(...fields.filter((field) => !trimmed.includes(field)));
      size -= (jsonBytes(value) - jsonBytes(shortened)) * fields.length;
    }
    return shortened;
  };
  const steps: Array<(excess: number) => void> = [
    () => (parsedData.raw = shorten(['parsedData.raw'], parsedData.raw, withoutBase64Bodies)),
    () => (parsedData.headers = shorten(['parsedData.headers'], parsedData.headers, () => ({}))),
    () => (cleanedContent.headers = shorten(['cleanedContent.headers'], cleanedContent.headers, () => ({}))),
    () => {
      // Held back unsanitized, as null, when too long to be carried (see carriesCleanedHtml): this step drops it.
      if (parsedData.htmlBody !== null && cleanedContent.html === null) trimmed.push('cleanedContent.html');
      cleanedContent.html = shorten(['cleanedContent.html'], cleanedContent.html, () => null);
    },
    () => (cleanedContent.text = shorten(['cleanedContent.text'], cleanedContent.text, () => null)),
    () => (parsedData.raw = shorten(['parsedData.raw'], parsedData.raw, () => '')),
    // One step for all: each is cut only past its bound (a real message's stay as they are).
    () => {
      email.subject = parsedData.subject = shorten(['subject', 'parsedData.subject'], email.subject, short);
      email.messageId = parsedData.messageId = shorten(['messageId', 'parsedData.messageId'], email.messageId, short);
      parsedData.inReplyTo &&= shorten(['parsedData.inReplyTo'], parsedData.inReplyTo, short);
      parsedData.references = shorten(['parsedData.references'], parsedData.references, firstWithin);
      email.from = parsedData.from = shorten(['from', 'parsedData.from'], email.from, shortGroup);
      email.to = parsedData.to = shorten(['to', 'parsedData.to'], email.to, shortGroup);
      parsedData.cc &&= shorten(['parsedData.cc'], parsedData.cc, shortGroup);
      parsedData.bcc &&= shorten(['parsedData.bcc'], parsedData.bcc, shortGroup);
      parsedData.replyTo &&= shorten(['parsedData.replyTo'], parsedData.replyTo, shortGroup);
      parsedData.attachments = cleanedContent.attachments = shorten(
        ['parsedData.attachments', 'cleanedContent.attachments'],
        parsedData.attachments,
        (attachments) => firstWithin(attachments.map(shortAttachment)),
      );
    },
    (excess) =>
      (parsedData.htmlBody &&= shorten(['parsedData.htmlBody'], parsedData.htmlBody, (text) => cutBy(text, excess))),
    (excess) =>
      (parsedData.textBody &&= shorten(['parsedData.textBody'], parsedData.textBody, (text) => cutBy(text, excess))),
  ];
  for (const trim of steps) {
    const excess = size - (MAX_PAYLOAD_BYTES - 1);
    if (excess <= 0) break;
    trim(excess);
  }
  return { body: JSON.stringify(payload), trimmed };
}

/**
 * Whether a webhook body can carry `cleanedContent.html` for this HTML body: one whose own JSON reaches
 * MAX_PAYLOAD_BYTES keeps the body over the limit until the bodies are cut, after the sanitized copy is dropped, so
 * that copy is not sanitized at all (seconds for some MB of dense markup).
 */
export function carriesCleanedHtml(htmlBody: string): boolean {
  if (htmlBody.length >= MAX_PAYLOAD_BYTES) return false;
  // JSON takes at most 6 bytes per UTF-16 unit (`\u0001`), so most bodies need no counting.
  return htmlBody.length * 6 + 2 < MAX_PAYLOAD_BYTES || jsonBytes(htmlBody) < MAX_PAYLOAD_BYTES;
}

/** The characters of every string in `value`, keys included: at most its JSON's size, often much less. */
function stringCharacters(value: unknown): number {
  if (typeof value === 'string') return value.length;
  if (value === null || typeof value !== 'object') return 0;
  let characters = 0;
  if (Array.isArray(value)) {
    for (const item of value) characters += stringCharacters(item);
    return characters;
  }
  for (const [key, item] of Object.entries(value)) characters += key.length + stringCharacters(item);
  return characters;
}

/**
 * Past MAX_PAYLOAD_BYTES, a subject, message id, address, name, file name or type is cut to this many characters:
 * RFC 5322 caps a header line at 998, so only a folded or broken header is longer.
 */
const MAX_SHORT_CHARS = 1000;

/** Past MAX_PAYLOAD_BYTES, an address group, References and the attachments keep their first entries that fit here. */
const MAX_LIST_BYTES = 50_000;

function short(text: string): string {
  return firstCharacters(text, MAX_SHORT_CHARS);
}

/** The first of `items` whose JSON fits in MAX_LIST_BYTES. */
function firstWithin<T>(items: T[]): T[] {
  let used = 0;
  let count = 0;
  for (; count < items.length; count++) {
    used += Buffer.byteLength(JSON.stringify(items[count])) + 1;
    if (used > MAX_LIST_BYTES) break;
  }
  return items.slice(0, count);
}

/** A group's first addresses; its text says how many were left out, as `trimmed` reaches no receiver. */
function shortGroup(group: AddressList): AddressList {
  const addresses = firstWithin(
    group.addresses.map(({ name, address }) => ({ name: name && short(name), address: address && short(address) })),
  );
  const left = group.addresses.length - addresses.length;
  const text = short(group.text);
  return { text: left === 0 ? text : `${text}… (${left} more addresses left out)`, addresses };
}

function shortAttachment<T extends { filename: string; contentType: string; contentId: string }>(attachment: T): T {
  const { filename, contentType, contentId } = attachment;
  return { ...attachment, filename: short(filename), contentType: short(contentType), contentId: short(contentId) };
}

/** `raw` with each run of base64 lines (an encoded body) replaced by BINARY_REMOVED. */
function withoutBase64Bodies(raw: string): string {
  return raw.replace(/(?:^[A-Za-z0-9+/]{40,}={0,2}\r?\n){2,}/gm, `${BINARY_REMOVED}\r\n`);
}

/** `text` cut so that its JSON takes `excess` bytes less (or to ""). */
function cutBy(text: string, excess: number): string {
  return jsonPrefix(text, jsonBytes(text) - excess);
}
