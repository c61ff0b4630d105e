import { createHmac } from 'node:crypto';
import { STANDARD_SECRET_PREFIX } from '../endpoints/index.ts';

/**
 * The HMAC key of an endpoint secret. A `whsec_<base64>` secret is used as Standard Webhooks defines it (the decoded
 * bytes); any other string is used as its UTF-8 bytes, which a receiver verifies with
 * `new Webhook(new TextEncoder().encode(secret), { format: 'raw' })`.
 */
function signingKey(secret: string): Buffer {
  if (secret.startsWith(STANDARD_SECRET_PREFIX)) {
    const decoded = Buffer.from(secret.slice(STANDARD_SECRET_PREFIX.length), 'base64');
    if (decoded.length > 0) return decoded;
  }
  return Buffer.from(secret, 'utf8');
}

/** `webhook-signature` value: `v1,<base64 HMAC-SHA256 of "id.timestamp.body">`, timestamp in Unix seconds. */
export function standardWebhookSignature(secret: string, id: string, timestampSeconds: number, body: string): string {
  const mac = createHmac('sha256', signingKey(secret)).update(`${id}.${timestampSeconds}.${body}`).digest('base64');
  return `v1,${mac}`;
}

/** The legacy webhooks' `X-Webhook-Signature`: `sha256=<hex HMAC-SHA256 of the body>` keyed by the secret's text. */
export function legacyWebhookSignature(secret: string, body: string): string {
  return `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`;
}
