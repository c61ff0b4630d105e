import { createHash } from 'node:crypto';
import type { ParsedMessage } from '../mime/index.ts';
import type { Verdicts } from './verdicts.ts';

/** What the analysis of one message yields: its parsed form, its verdicts, and the hash that finds retried copies. */
export interface Analysis {
  parsed: ParsedMessage;
  verdicts: Verdicts;
  /** See contentSha256. */
  contentSha256: string;
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
