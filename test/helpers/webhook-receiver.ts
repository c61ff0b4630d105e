import { createServer, type IncomingHttpHeaders, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface ReceivedRequest {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  /** The body exactly as received (what signatures cover). */
  body: string;
  /** `performance.timeOrigin + performance.now()` at the end of the body, for latency figures. */
  receivedAt: number;
}

/**
 * How to answer one request: a status with optional headers, body, and delay or promise to answer after, or `hang`
 * to never answer.
 */
export type Answer =
  | { status: number; headers?: Record<string, string>; body?: string; delayMs?: number; after?: Promise<unknown> }
  | 'hang';

/**
 * A webhook receiver on loopback that records every request and answers as told: a script of answers used in order
 * (the last one repeats), or 200 `ok` by default. It can be stopped and started again on the same port to play a
 * receiver that is down and then comes back.
 */
export async function startWebhookReceiver(port = 0) {
  const requests: ReceivedRequest[] = [];
  let script: Answer[] = [];
  let answered = 0;
  const hanging = new Set<ServerResponse>();
  const waiters: Array<{ count: number; resolve: () => void }> = [];

  function answerFor(): Answer {
    if (script.length === 0) return { status: 200, body: 'ok' };
    return script[Math.min(answered, script.length - 1)]!;
  }

  function notify() {
    for (const waiter of [...waiters]) {
      if (requests.length >= waiter.count) {
        waiters.splice(waiters.indexOf(waiter), 1);
        waiter.resolve();
      }
    }
  }

  let server: Server;
  async function listen(onPort: number) {
    server = createServer((request, response) => {
      const chunks: Buffer[] = [];
      request.on('data', (chunk: Buffer) => chunks.push(chunk));
      request.on('end', () => {
        requests.push({
          method: request.method ?? '',
          path: request.url ?? '',
          headers: request.headers,
          body: Buffer.concat(chunks).toString('utf8'),
          receivedAt: performance.timeOrigin + performance.now(),
        });
        const answer = answerFor();
        answered++;
        if (answer === 'hang') hanging.add(response);
        else if (answer.after) {
          hanging.add(response);
          void answer.after.then(() => {
            if (!hanging.delete(response)) return;
            response.writeHead(answer.status, answer.headers).end(answer.body ?? '');
          });
        } else if (answer.delayMs) {
          hanging.add(response);
          setTimeout(() => {
            hanging.delete(response);
            response.writeHead(answer.status, answer.headers).end(answer.body ?? '');
          }, answer.delayMs);
        } else response.writeHead(answer.status, answer.headers).end(answer.body ?? '');
        notify();
      });
    });
    await new Promise<void>((resolve) => server.listen(onPort, '127.0.0.1', resolve));
    return (server.address() as AddressInfo).port;
  }

  const boundPort = await listen(port);

  async function stop() {
    for (const response of hanging) response.destroy();
    hanging.clear();
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  return {
    url: `http://127.0.0.1:${boundPort}/hook`,
    port: boundPort,
    requests,
    /** Answers the next requests in this order; the last answer repeats. Resets the answer count. */
    answer(...answers: Answer[]) {
      script = answers;
      answered = 0;
    },
    /** Resolves once at least `count` requests have arrived; rejects after `timeoutMs`. */
    waitForRequests(count: number, timeoutMs = 10_000): Promise<void> {
      if (requests.length >= count) return Promise.resolve();
      return new Promise((resolve, reject) => {
        const timer = setTimeout(
          () => reject(new Error(`expected ${count} webhook requests, got ${requests.length} in ${timeoutMs} ms`)),
          timeoutMs,
        );
        waiters.push({
          count,
          resolve: () => {
            clearTimeout(timer);
            resolve();
          },
        });
      });
    },
    clear() {
      requests.length = 0;
      script = [];
      answered = 0;
    },
    /** Takes the receiver off the network (connections refused) until `restart()`. */
    stop,
    async restart() {
      await listen(boundPort);
    },
    close: stop,
  };
}

export type WebhookReceiver = Awaited<ReturnType<typeof startWebhookReceiver>>;
