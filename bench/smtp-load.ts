import { connect, type Socket } from 'node:net';

/**
 * A lightweight loopback SMTP load generator: N persistent connections, each sending messages back to back with
 * PIPELINING (MAIL, RCPT and DATA in one write). It measures, per message, the time from writing the end of DATA to
 * reading the 250. Bounded by a message count and a deadline, whichever comes first.
 */
export interface LoadOptions {
  port: number;
  connections: number;
  /** Total messages across all connections. */
  messages: number;
  /** Stop sending new messages after this long. */
  maxSeconds: number;
  from: string;
  to: string;
  /** Builds message `n` (must end with CRLF; the generator adds the final dot line). */
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

export async function runLoad(options: LoadOptions): Promise<LoadResult> {
  let next = 0;
  let accepted = 0;
  let refused = 0;
  const latencies: number[] = [];
  const started = performance.now();
  const deadline = started + options.maxSeconds * 1000;

  async function worker() {
    const socket = connect({ port: options.port, host: '127.0.0.1' });
    socket.setNoDelay(true);
    const read = replyReader(socket);
    await read();
    socket.write('EHLO load.bench\r\n');
    await read();
    while (next < options.messages && performance.now() < deadline) {
      const n = next++;
      socket.write(`MAIL FROM:<${options.from}>\r\nRCPT TO:<${options.to}>\r\nDATA\r\n`);
      const [mail, rcpt, data] = [await read(), await read(), await read()];
      if (!mail.startsWith('250') || !rcpt.startsWith('250') || !data.startsWith('354')) {
        refused++;
        if (data.startsWith('354')) socket.write('.\r\n');
        break;
      }
      socket.write(options.message(n));
      const endOfData = performance.now();
      socket.write('.\r\n');
      const reply = await read();
      if (reply.startsWith('250')) {
        accepted++;
        latencies.push(performance.now() - endOfData);
      } else refused++;
    }
    socket.write('QUIT\r\n');
    await read();
    socket.destroy();
  }

  await Promise.all(Array.from({ length: options.connections }, () => worker()));
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

/** A 10 KB plain-text message with its own Message-ID. */
export function tenKilobyteMessage(from: string, to: string) {
  const line = `${'The quick brown fox jumps over the lazy dog. '.repeat(1)}0123456789abcdefghijklmnopqrstu\r\n`;
  const body = line.repeat(Math.ceil(10_000 / line.length));
  return (n: number) =>
    Buffer.from(
      `From: Bench <${from}>\r\nTo: <${to}>\r\nSubject: Load message ${n}\r\nMessage-ID: <bench-${process.pid}-${Date.now()}-${n}@sender.bench>\r\nDate: ${new Date().toUTCString()}\r\nMIME-Version: 1.0\r\nContent-Type: text/plain; charset=utf-8\r\n\r\n${body}`,
    );
}
