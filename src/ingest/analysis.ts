import { createHash } from 'node:crypto';
import { type ParsedMessage, sanitizeEmailHtml } from '../mime/index.ts';
import type { Verdicts } from './verdicts.ts';

/** What the analysis of one message yields: its parsed form, its verdicts, and the hash that finds retried copies. */
export interface Analysis {
  parsed: ParsedMessage;
  verdicts: Verdicts;
  /** See contentSha256. */
  contentSha256: string;
  /** See webhookHtml. */
  sanitizedHtml?: string;
}

/**
 * The HTML body sanitized as a webhook body carries it (`cleanedContent.html`), when a recipient's route sends the
 * message to a webhook and it has HTML: computed once per message with its analysis, off the event loop, instead of
 * per webhook on the event loop (a few milliseconds for 10 KB of HTML). It goes to the delivery worker with the
 * message's fresh jobs, not to the database; a job claimed later sanitizes again. HTML of `maxChars` characters or
 * more is not sanitized: its JSON alone passes the webhook body's limit, whose trim drops the sanitized copy (see
 * delivery's carriesCleanedHtml, which the analysis worker does not load with all of delivery).
 */
export function webhookHtml(parsed: ParsedMessage, routedToWebhook: boolean, maxChars: number): string | undefined {
  const { htmlBody } = parsed;
  return routedToWebhook && htmlBody !== null && htmlBody.length < maxChars ? sanitizeEmailHtml(htmlBody) : undefined;
}

/**
 * SHA-256 of the message as the client sent it, before our trace header, in hex: the same for a copy a sender
 * retries. Computed with the analysis, off the event loop.
 */
export function contentSha256(chunks: readonly Uint8Array[]): string {
  const hash = createHash('sha256');
  for (const chunk of chunks) hash.update(chunk);
  return hash.digest('hex');
}
