import type { StoredEmail } from '../mail/index.ts';
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
 * of a webhook, and the mail API serves it. Over 1 MB, the header maps go first, then the sanitized HTML copy and the
 * text copy, and last the bodies are cut short.
 */
export function buildEmailReceivedPayload(input: {
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
}): BuiltPayload {
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
  const parsedData: Record<string, unknown> = {
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
  const cleanedContent: Record<string, unknown> = {
    html: email.htmlBody === null ? null : (input.sanitizedHtml ?? sanitizeEmailHtml(email.htmlBody)),
    text: email.textBody,
    hasHtml: Boolean(email.htmlBody),
    hasText: Boolean(email.textBody),
    attachments,
    headers,
  };
  const payload = {
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
  return fitUnderLimit(payload, parsedData, cleanedContent);
}

function fitUnderLimit(
  payload: object,
  parsedData: Record<string, unknown>,
  cleanedContent: Record<string, unknown>,
): BuiltPayload {
  const trimmed: string[] = [];
  let body = JSON.stringify(payload);
  const steps: Array<[string, () => void]> = [
    ['parsedData.headers', () => (parsedData.headers = {})],
    ['cleanedContent.headers', () => (cleanedContent.headers = {})],
    ['cleanedContent.html', () => (cleanedContent.html = null)],
    ['cleanedContent.text', () => (cleanedContent.text = null)],
  ];
  for (const [field, trim] of steps) {
    if (Buffer.byteLength(body) < MAX_PAYLOAD_BYTES) return { body, trimmed };
    trim();
    trimmed.push(field);
    body = JSON.stringify(payload);
  }
  for (const field of ['htmlBody', 'textBody'] as const) {
    const size = Buffer.byteLength(body);
    if (size < MAX_PAYLOAD_BYTES) return { body, trimmed };
    const value = parsedData[field];
    if (typeof value !== 'string') continue;
    const excess = size - MAX_PAYLOAD_BYTES + 1024;
    // JSON escaping can make one character several bytes, so cut by the bytes it actually took.
    const encoded = Buffer.byteLength(JSON.stringify(value));
    const keep = Math.max(0, Math.floor(value.length * (1 - excess / encoded)));
    const cut = value.slice(0, keep);
    // A cut between an emoji's two UTF-16 halves would leave a lone one, which JSON parsers refuse.
    parsedData[field] = /[\uD800-\uDBFF]$/.test(cut) ? cut.slice(0, -1) : cut;
    trimmed.push(`parsedData.${field}`);
    body = JSON.stringify(payload);
  }
  return { body, trimmed };
}
