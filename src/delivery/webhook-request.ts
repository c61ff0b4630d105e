import { firstCharacters } from '../core/index.ts';
import type { WebhookTarget } from '../endpoints/index.ts';
import { buildEmailReceivedPayload, type PayloadEmail } from './email-received-payload.ts';
import type { HttpPost } from './http-sender.ts';
import { legacyWebhookSignature, standardWebhookSignature } from './signing.ts';

/**
 * What Inbound's webhooks say they are, and what `@inboundemail/sdk` types a webhook's `user-agent` as: receivers
 * written against it may check it.
 */
const WEBHOOK_USER_AGENT = 'InboundEmail-Webhook/1.0';

export interface WebhookRequestInput {
  target: WebhookTarget;
  email: PayloadEmail;
  /** The message as received (see buildEmailReceivedPayload). */
  raw: string | null;
  /** The email's HTML sanitized already (see buildEmailReceivedPayload). */
  sanitizedHtml?: string | undefined;
  /** Standard Webhooks `webhook-id`: the delivery id, stable across retries so receivers can dedupe. */
  webhookId: string;
  timestamp: Date;
  attachmentUrl: string;
  /** Sends to this URL instead of the target's (endpoint tests). */
  url?: string;
}

/**
 * Header names Mailroom computes per request; custom headers cannot replace them, or signatures would not verify and
 * the body would not be framed as sent.
 */
const COMPUTED_HEADERS = new Set([
  'webhook-id',
  'webhook-timestamp',
  'webhook-signature',
  'content-type',
  'content-length',
  'transfer-encoding',
  'host',
  'connection',
]);

/**
 * X-Message-Id carries at most this much of the Message-ID (RFC 5322's line length): a broken or hostile one of
 * hundreds of KB would pass what receivers accept in headers (Node's 16 KB, many proxies' 8 KB), and each attempt be
 * refused with 431. The body carries it whole, up to its own limit.
 */
const MAX_MESSAGE_ID_HEADER_CHARS = 998;

/** A header value HTTP can carry: characters outside printable ASCII (a UTF-8 Message-ID's) percent-encoded. */
function headerText(value: string): string {
  return value.replace(/[^\x20-\x7e]/gu, (char) =>
    [...Buffer.from(char, 'utf8')].map((byte) => `%${byte.toString(16).toUpperCase().padStart(2, '0')}`).join(''),
  );
}

/**
 * The complete `email.received` request for one target: the spec's body and headers, the endpoint's custom headers
 * (which may override the informational built-ins, as in Inbound), and Standard Webhooks signing when there is a secret.
 */
export function buildWebhookRequest(input: WebhookRequestInput): HttpPost & { trimmed: string[] } {
  const { target, email, timestamp } = input;
  const { body, trimmed } = buildEmailReceivedPayload({
    email,
    raw: input.raw,
    sanitizedHtml: input.sanitizedHtml,
    endpoint: { id: target.id, name: target.name, type: 'webhook' },
    attachmentUrl: input.attachmentUrl,
    timestamp,
  });
  const headers: Record<string, string> = {
    'user-agent': WEBHOOK_USER_AGENT,
    'x-webhook-event': 'email.received',
    'x-endpoint-id': target.id,
    'x-webhook-timestamp': timestamp.toISOString(),
    'x-email-id': email.id,
    'x-message-id': headerText(firstCharacters(email.messageId ?? '', MAX_MESSAGE_ID_HEADER_CHARS)),
    'x-webhook-verification-token': target.verificationToken,
  };
  if (target.legacy) {
    headers['x-webhook-id'] = input.webhookId;
    if (target.secret) headers['x-webhook-signature'] = legacyWebhookSignature(target.secret, body);
  }
  for (const [name, value] of Object.entries(target.headers)) {
    const key = name.toLowerCase();
    if (!COMPUTED_HEADERS.has(key)) headers[key] = value;
  }
  const seconds = Math.floor(timestamp.getTime() / 1000);
  headers['content-type'] = 'application/json';
  headers['webhook-id'] = input.webhookId;
  headers['webhook-timestamp'] = String(seconds);
  if (target.secret) {
    // Space-separated, as Standard Webhooks lists several: a receiver verifies with the new secret or the old one.
    headers['webhook-signature'] = [target.secret, target.previousSecret]
      .filter((secret): secret is string => secret !== undefined)
      .map((secret) => standardWebhookSignature(secret, input.webhookId, seconds, body))
      .join(' ');
  }
  return { url: input.url ?? target.url, headers, body, timeoutMs: target.timeoutMs, trimmed };
}
