/**
 * The routed ingest bench's webhook endpoint: a loopback HTTP server, run as its own process so that its CPU is not
 * the load client's, that answers every POST 200 at once and counts them. It keeps only the `webhook-id`s it has
 * seen (to count duplicates), never the bodies. `GET /count` answers `{ requests, unique }`. Prints its port.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

let requests = 0;
const seen = new Set<string>();

const server = createServer((request, response) => {
  if (request.method === 'GET') {
    response
      .writeHead(200, { 'content-type': 'application/json' })
      .end(JSON.stringify({ requests, unique: seen.size }));
    return;
  }
  request.on('data', () => {});
  request.on('end', () => {
    requests++;
    seen.add(String(request.headers['webhook-id']));
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
