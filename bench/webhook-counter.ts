/**
 * The bench's webhook endpoint: a loopback HTTP server, run as its own process so that its CPU is not the load
 * client's, that answers every POST 200 at once and counts them. It keeps only the `webhook-id`s it has seen (to
 * count duplicates), never the bodies. `GET /count` answers `{ requests, unique, failed, stalled }`. Prints its port.
 *
 * The soak (bench/soak.ts) sets its environment to make it flaky and to keep a log:
 *   WEBHOOK_FAIL_SHARE   share of POSTs answered 500 at once
 *   WEBHOOK_STALL_SHARE  share of POSTs held WEBHOOK_STALL_MS (default 5000) before their 200, past the sender's
 *                        timeout, so that the sender gives up and retries
 *   WEBHOOK_LOG=true     keep, per `x-message-id`, every 200 answered at once as [ms since the epoch, webhook-id];
 *                        `GET /log` answers them
 * `requests` and `unique` count the POSTs answered 200 at once, as `GET /log` lists them.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

const failShare = Number(process.env.WEBHOOK_FAIL_SHARE ?? 0);
const stallShare = Number(process.env.WEBHOOK_STALL_SHARE ?? 0);
const stallMs = Number(process.env.WEBHOOK_STALL_MS ?? 5000);
const keepLog = process.env.WEBHOOK_LOG === 'true';

let requests = 0;
let failed = 0;
let stalled = 0;
const seen = new Set<string>();
const log = new Map<string, Array<[number, string]>>();

const server = createServer((request, response) => {
  if (request.method === 'GET') {
    const body = request.url === '/log' ? Object.fromEntries(log) : { requests, unique: seen.size, failed, stalled };
    response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(body));
    return;
  }
  request.on('data', () => {});
  request.on('end', () => {
    const draw = Math.random();
    if (draw < failShare) {
      failed++;
      response.writeHead(500).end('failing on purpose');
      return;
    }
    if (draw < failShare + stallShare) {
      stalled++;
      setTimeout(() => response.writeHead(200).end('late'), stallMs);
      return;
    }
    requests++;
    const webhookId = String(request.headers['webhook-id']);
    seen.add(webhookId);
    if (keepLog) {
      const messageId = String(request.headers['x-message-id']).replace(/^<|>$/g, '');
      const entries = log.get(messageId) ?? [];
      entries.push([Date.now(), webhookId]);
      log.set(messageId, entries);
    }
    response.writeHead(200).end('ok');
  });
});

server.listen(0, '127.0.0.1', () => {
  process.stdout.write(`WEBHOOK COUNTER listening on ${(server.address() as AddressInfo).port}\n`);
});
process.on('SIGTERM', () => {
  server.close(() => process.exit(0));
  server.closeAllConnections();
});
