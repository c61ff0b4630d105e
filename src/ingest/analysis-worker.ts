import { workerData } from 'node:worker_threads';
import { createDnsLookup } from '../dns/index.ts';
import { type ParsedMessage, parseMessage } from './message-parser.ts';
import { createVerdictChecker, type Verdicts } from './verdicts.ts';
import { serveRequests } from './worker-pool.ts';

export interface AnalysisRequest {
  /** The message as the client sent it, in order (views of shared memory arrive without a copy). */
  chunks: readonly Uint8Array[];
  clientIp: string;
  helo: string;
  mailFrom: string;
}

export interface Analysis {
  parsed: ParsedMessage;
  verdicts: Verdicts;
}

export interface AnalysisWorkerData {
  dnsServers: string[];
  mxHost: string;
}

/**
 * Parsing and authentication verdicts, off the event loop that serves SMTP and HTTP. Receives the message in
 * SharedArrayBuffers (no copy), answers with the parsed fields and the verdicts.
 */
const { dnsServers, mxHost } = workerData as AnalysisWorkerData;
const checkVerdicts = createVerdictChecker(createDnsLookup(dnsServers).raw);

serveRequests<AnalysisRequest, Analysis>(async (request) => {
  const chunks = request.chunks.map((chunk) => Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength));
  const [parsed, verdicts] = await Promise.all([
    parseMessage(chunks),
    checkVerdicts({
      chunks,
      clientIp: request.clientIp,
      helo: request.helo,
      mailFrom: request.mailFrom,
      mta: mxHost,
    }),
  ]);
  return { parsed, verdicts };
});
