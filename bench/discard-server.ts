/**
 * The protocol ceiling for the ingest bench: a minimal smtp-server that reads each message to the end and discards
 * it, with the same limits and options Mailroom's receiver uses. Run as its own process; prints its port.
 */
import type { AddressInfo } from 'node:net';
import { SMTPServer } from 'smtp-server';

const server = new SMTPServer({
  size: 40 * 1024 * 1024,
  disabledCommands: ['AUTH', 'STARTTLS'],
  maxAllowedUnauthenticatedCommands: false,
  hideENHANCEDSTATUSCODES: false,
  disableReverseLookup: true,
  logger: false,
  onRcptTo(_address, _session, callback) {
    callback();
  },
  onData(stream, _session, callback) {
    stream.on('data', () => {});
    stream.on('end', () => callback(null, 'Ok: discarded'));
  },
});

server.listen(0, '127.0.0.1', () => {
  const { port } = (server as unknown as { server: import('node:net').Server }).server.address() as AddressInfo;
  process.stdout.write(`DISCARD SMTP listening on ${port}\n`);
});
process.on('SIGTERM', () => server.close(() => process.exit(0)));
