import { firstCharacters } from '../core/index.ts';
import type { AddressList, StoredEmail } from '../mail/index.ts';
import { sanitizeEmailHtml } from '../mime/index.ts';

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
export function attachmentDownloadUrl(template: string, emailId: string, index: number): string {
  return template.replace(/\{(emailId|index)\}/g, (_, name) =>
    name === 'emailId' ? encodeURIComponent(emailId) : String(index),
  );
}

/**
 * The one builder of the `email.received` body, for real deliveries and endpoint tests alike. It is built from the
 * stored email alone. Attachment bytes are never inlined (each attachment carries a `downloadUrl`), and neither
 * is the raw MIME (`parsedData.raw`): reading it back from the blob store on every delivery would be the slowest step
 * of a webhook, and the mail API serves it. Over 1 MB it is trimmed, see fitUnderLimit.
 */
export function buildEmailReceivedPayload(input: PayloadInput): BuiltPayload {
  return fitUnderLimit(emailReceivedPayload(input));
}

interface PayloadInput {
  email: PayloadEmail;
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
    attachments,
    headers,
    ...(email.priority === null ? {} : { priority: email.priority }),
  };
  const cleanedContent = {
    html: email.htmlBody === null ? null : (input.sanitizedHtml ?? sanitizeEmailHtml(email.htmlBody)),
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
 * copies (the header maps, the sanitized HTML and the text), then what only a hostile or broken message makes long
 * (cut to bounds a real one stays within), and last the bodies, cut by just what is still over. The bounded fields
 * take some 600 KB at most, so cutting the bodies always makes it fit.
 */
function fitUnderLimit(payload: ReturnType<typeof emailReceivedPayload>): BuiltPayload {
  const { email } = payload;
  const { parsedData, cleanedContent } = email;
  const trimmed: string[] = [];
  /** `cut(value)`, with `fields` (the value's places) in `trimmed` when that is not the value as it was. */
  const shorten = <T>(fields: string[], value: T, cut: (value: T) => T): T => {
    const shortened = cut(value);
    // A body may be tens of MB: a string is compared as it is, not serialized twice more.
    const changed =
      typeof value === 'string' ? shortened !== value : JSON.stringify(shortened) !== JSON.stringify(value);
    if (changed) trimmed.push(...fields);
    return shortened;
  };
  const steps: Array<(excess: number) => void> = [
    () => (parsedData.headers = shorten(['parsedData.headers'], parsedData.headers, () => ({}))),
    () => (cleanedContent.headers = shorten(['cleanedContent.headers'], cleanedContent.headers, () => ({}))),
    () => (cleanedContent.html = shorten(['cleanedContent.html'], cleanedContent.html, () => null)),
    () => (cleanedContent.text = shorten(['cleanedContent.text'], cleanedContent.text, () => null)),
    // One step for all: each is cut only past its bound (a real message's stay as they are), and the body, which may
    // be tens of MB yet, is serialized once rather than once per field.
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
  let body = JSON.stringify(payload);
  for (const trim of steps) {
    const excess = Buffer.byteLength(body) - (MAX_PAYLOAD_BYTES - 1);
    if (excess <= 0) break;
    trim(excess);
    body = JSON.stringify(payload);
  }
  return { body, trimmed };
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

/** `text` cut so that its JSON takes `excess` bytes less (or to ""), never between an emoji's two UTF-16 halves. */
function cutBy(text: string, excess: number): string {
  let size = Buffer.byteLength(JSON.stringify(text));
  const room = size - excess;
  let cut = text;
  // JSON escaping can make one character several bytes, so cut in proportion to the bytes the text took, and again
  // while they were uneven enough (costlier at the start) to leave it over.
  while (size > room && cut.length > 0) {
    cut = firstUnits(cut, Math.min(cut.length - 1, Math.floor((cut.length * room) / size)));
    size = Buffer.byteLength(JSON.stringify(cut));
  }
  return cut;
}

/** The first `count` UTF-16 units of `text`, less a last one that is half an emoji: JSON parsers refuse a lone half. */
function firstUnits(text: string, count: number): string {
  const cut = text.slice(0, Math.max(0, count));
  return /[\uD800-\uDBFF]$/.test(cut) ? cut.slice(0, -1) : cut;
}
