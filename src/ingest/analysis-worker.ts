import { workerData } from 'node:worker_threads';
import type { SpamdConfig } from '../config/index.ts';
import { createDnsLookup } from '../dns/index.ts';
import { type ParsedMessage, parseMessage, sanitizeEmailHtml } from '../mime/index.ts';
import { serveRequests } from '../workers/index.ts';
import { type Analysis, contentSha256, webhookHtml } from './analysis.ts';
import { createSpamScanner } from './spamd.ts';
import { createVerdictChecker } from './verdicts.ts';

export interface AnalysisRequest {
  /** The message as the client sent it, in order (views of shared memory arrive without a copy). */
  chunks: readonly Uint8Array[];
  /** Our trace header (see VerdictInput), as latin1 text. */
  traceHeader: string;
  clientIp: string;
  helo: string;
  mailFrom: string;
  /** A recipient's route sends the message to a webhook (see webhookHtml). */
  routedToWebhook: boolean;
}

/** HTML to sanitize as a webhook body carries it, for a delivery job that was claimed (see IngestService.cleanHtml). */
export interface SanitizeRequest {
  sanitize: string;
}

export interface AnalysisWorkerData {
  dnsServers: string[];
  mxHost: string;
  spamd?: SpamdConfig;
  /** See webhookHtml. */
  webhookHtmlMaxChars: number;
}

/**
 * Parsing and verdicts (authentication, and spam when spamd is configured), off the event loop that serves SMTP and
 * HTTP. Receives the message in SharedArrayBuffers (no copy), answers with its Analysis.
 */
const { dnsServers, mxHost, spamd, webhookHtmlMaxChars } = workerData as AnalysisWorkerData;
const checkVerdicts = createVerdictChecker(createDnsLookup(dnsServers).raw, spamd && createSpamScanner(spamd));

/**
 * Messages are parsed one after another, in arrival order. Parsed side by side, the dozens a busy worker holds would
 * share its CPU and all finish together, reaching the writer in one burst after it had sat idle; one at a time, each
 * goes to the writer as soon as it is parsed, so parsing and committing overlap. Verdicts are not queued: they may wait
 * on DNS, and a slow answer must not hold up other messages.
 */
let parsing: Promise<unknown> = Promise.resolve();
function parseInTurn(chunks: Buffer[]): Promise<ParsedMessage> {
  const parsed = parsing.then(() => parseMessage(chunks));
  parsing = parsed.catch(() => {});
  return parsed;
}

/** A Buffer over the same bytes as a view that arrived from another thread (a Uint8Array there), without a copy. */
const asBuffer = (view: Uint8Array) => Buffer.from(view.buffer, view.byteOffset, view.byteLength);

serveRequests<AnalysisRequest | SanitizeRequest, Analysis | string>(async (request) => {
  if ('sanitize' in request) return sanitizeEmailHtml(request.sanitize);
  const chunks = request.chunks.map(asBuffer);
  const [parsed, verdicts] = await Promise.all([
    parseInTurn(chunks),
    checkVerdicts({
      chunks,
      traceHeader: Buffer.from(request.traceHeader, 'latin1'),
      clientIp: request.clientIp,
      helo: request.helo,
      mailFrom: request.mailFrom,
      mta: mxHost,
    }),
  ]);
  return {
    parsed,
    verdicts,
    contentSha256: contentSha256(chunks),
    sanitizedHtml: webhookHtml(parsed, request.routedToWebhook, webhookHtmlMaxChars),
  };
});
