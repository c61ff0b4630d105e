import { parentPort, workerData } from 'node:worker_threads';
import { createDnsLookup } from '../dns/index.ts';
import { parseMessage } from './message-parser.ts';
import { createVerdictChecker } from './verdicts.ts';

/**
 * Parsing and authentication verdicts, off the event loop that serves SMTP and HTTP. Receives the message in a
 * SharedArrayBuffer (no copy), answers with the parsed fields and the verdicts.
 */
const { dnsServers, mxHost } = workerData as { dnsServers: string[]; mxHost: string };
const checkVerdicts = createVerdictChecker(createDnsLookup(dnsServers).raw);

parentPort!.on(
  'message',
  async (request: {
    id: number;
    buffer: SharedArrayBuffer;
    offset: number;
    length: number;
    clientIp: string;
    helo: string;
    mailFrom: string;
  }) => {
    const chunks = [Buffer.from(request.buffer, request.offset, request.length)];
    try {
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
      parentPort!.postMessage({ id: request.id, parsed, verdicts });
    } catch (error) {
      parentPort!.postMessage({ id: request.id, error: error instanceof Error ? error.message : String(error) });
    }
  },
);
