import { connect, type Socket } from 'node:net';
import { Readable } from 'node:stream';
import nodemailer from 'nodemailer';

/**
 * Loopback SMTP load generators: N concurrent connections, each sending messages back to back. Each measures, per
 * message, the time from the end of DATA to the 250. Bounded by a message count and a deadline, whichever comes
 * first. Two clients:
 * - `pipelining`: a minimal client of our own that sends MAIL, RCPT and DATA in one write (PIPELINING) and the
 *   message from a ready Buffer. It costs the machine little, so the server's own cost sets the pace.
 * - `nodemailer`: nodemailer's pooled SMTP transport, a real client library, which sends each command after the
 *   last reply and streams the message through its encoder. It costs about three times as much CPU per message
 *   as the pipelining client (the ingest bench reports both), and on a 2-core machine that CPU is taken from the
 *   server.
 */
export const LOAD_CLIENTS = ['pipelining', 'nodemailer'] as const;
export type LoadClient = (typeof LOAD_CLIENTS)[number];

export interface LoadOptions {
  client: LoadClient;
  port: number;
  connections: number;
  /** Total messages across all connections. */
  messages: number;
  /** Stop sending new messages after this long. */
  maxSeconds: number;
  /** The envelope sender of message `n`. */
  from: (n: number) => string;
  to: string;
  /** Builds message `n` (must end with CRLF; the client adds the final dot line). */
  message: (n: number) => Buffer;
}

export interface LoadResult {
  connections: number;
  sent: number;
  accepted: number;
  refused: number;
  seconds: number;
  messagesPerSecond: number;
  p50Ms: number;
  p99Ms: number;
}

/**
 * One connection's sending loop: `take` hands out the next message number until the load is done, and `record`
 * takes each message's latency in ms, or null for a refusal.
 */
type ConnectionLoop = (take: () => number | undefined, record: (latencyMs: number | null) => void) => Promise<void>;

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

/** Reads whole SMTP replies (multi-line ones joined) from a socket. */
function replyReader(socket: Socket) {
  let buffer = '';
  const queue: string[] = [];
  let waiter: ((reply: string) => void) | undefined;
  socket.on('data', (chunk: Buffer) => {
    buffer += chunk.toString('latin1');
    for (;;) {
      const match = /(^|\r\n)\d{3} [^\r\n]*\r\n/.exec(buffer);
      if (!match) break;
      const end = match.index + match[0].length;
      const reply = buffer.slice(0, end);
      buffer = buffer.slice(end);
      if (waiter) {
        const wake = waiter;
        waiter = undefined;
        wake(reply);
      } else queue.push(reply);
    }
  });
  socket.on('close', () => waiter?.(''));
  return () =>
    new Promise<string>((resolve) => {
      const next = queue.shift();
      if (next !== undefined) resolve(next);
      else if (socket.destroyed) resolve('');
      else waiter = resolve;
    });
}

function pipeliningClient(options: LoadOptions) {
  const loop: ConnectionLoop = async (take, record) => {
    const socket = connect({ port: options.port, host: '127.0.0.1' });
    socket.setNoDelay(true);
    const read = replyReader(socket);
    await read();
    socket.write('EHLO load.bench\r\n');
    await read();
    for (let n = take(); n !== undefined; n = take()) {
      socket.write(`MAIL FROM:<${options.from(n)}>\r\nRCPT TO:<${options.to}>\r\nDATA\r\n`);
      const [mail, rcpt, data] = [await read(), await read(), await read()];
      if (!mail.startsWith('250') || !rcpt.startsWith('250') || !data.startsWith('354')) {
        record(null);
        if (data.startsWith('354')) socket.write('.\r\n');
        break;
      }
      socket.write(options.message(n));
      const endOfData = performance.now();
      socket.write('.\r\n');
      const reply = await read();
      record(reply.startsWith('250') ? performance.now() - endOfData : null);
    }
    socket.write('QUIT\r\n');
    await read();
    socket.destroy();
  };
  return { loop, close: () => {} };
}

function nodemailerClient(options: LoadOptions) {
  const transport = nodemailer.createTransport({
    host: '127.0.0.1',
    port: options.port,
    ignoreTLS: true,
    pool: true,
    maxConnections: options.connections,
    maxMessages: Number.POSITIVE_INFINITY,
  });
  const loop: ConnectionLoop = async (take, record) => {
    for (let n = take(); n !== undefined; n = take()) {
      // The message's stream ends when nodemailer has read all of it, a few ticks before it writes the final dot line.
      const raw = Readable.from([options.message(n)]);
      let endOfData = 0;
      raw.once('end', () => {
        endOfData = performance.now();
      });
      try {
        await transport.sendMail({ envelope: { from: options.from(n), to: [options.to] }, raw });
        record(performance.now() - endOfData);
      } catch {
        record(null);
        break;
      }
    }
  };
  return { loop, close: () => transport.close() };
}

export async function runLoad(options: LoadOptions): Promise<LoadResult> {
  let next = 0;
  let accepted = 0;
  let refused = 0;
  const latencies: number[] = [];
  const started = performance.now();
  const deadline = started + options.maxSeconds * 1000;
  const take = () => (next < options.messages && performance.now() < deadline ? next++ : undefined);
  const record = (latencyMs: number | null) => {
    if (latencyMs === null) refused++;
    else {
      accepted++;
      latencies.push(latencyMs);
    }
  };

  const client = options.client === 'nodemailer' ? nodemailerClient(options) : pipeliningClient(options);
  await Promise.all(Array.from({ length: options.connections }, () => client.loop(take, record)));
  client.close();
  const seconds = (performance.now() - started) / 1000;
  latencies.sort((a, b) => a - b);
  const round = (value: number) => Math.round(value * 100) / 100;
  return {
    connections: options.connections,
    sent: next,
    accepted,
    refused,
    seconds: round(seconds),
    messagesPerSecond: Math.round(accepted / seconds),
    p50Ms: round(percentile(latencies, 50)),
    p99Ms: round(percentile(latencies, 99)),
  };
}
