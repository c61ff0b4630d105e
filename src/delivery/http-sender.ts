import type { LookupAddress } from 'node:dns';
import http, { type IncomingHttpHeaders } from 'node:http';
import https from 'node:https';
import { isIP, type LookupFunction } from 'node:net';
import { firstCharacters, storableText, urlHost } from '../core/index.ts';
import type { DnsLookup } from '../dns/index.ts';

/** Says why Mailroom must not connect to an IP address, or undefined when it may. */
export type AddressGuard = (ip: string) => string | undefined;

/** How a host name becomes the addresses to connect to. */
export type HostLookup = Pick<DnsLookup, 'hostAddresses'>;

export interface HttpPost {
  url: string;
  headers: Record<string, string>;
  body: string;
  timeoutMs: number;
}

export interface HttpOutcome {
  /** Absent when no response arrived (refused, timed out, blocked). */
  statusCode?: number;
  headers: IncomingHttpHeaders;
  /** The first RESPONSE_BODY_CHARS characters. */
  body: string;
  durationMs: number;
  error?: string;
  /** The URL or its resolved address is not allowed; retrying cannot help. */
  blocked?: boolean;
}

export const RESPONSE_BODY_CHARS = 2000;
/** Bytes read of a response before the rest is discarded. */
const MAX_READ_BYTES = 64 * 1024;
/**
 * How long a kept-alive connection to a receiver may sit unused before it is closed. Receivers that never close idle
 * connections themselves (Go's default) otherwise held one for each of an endpoint's slots for good, every
 * receiver's adding up to the process's file descriptors; under the 5 s after which uvicorn and Node close theirs.
 */
const IDLE_CONNECTION_MS = 4000;

class BlockedAddress extends Error {}

/**
 * Posts JSON bodies with keep-alive connections. Redirects are not followed, and the SSRF guard is applied to the
 * address actually connected to: every address a host name resolves to must pass, so DNS answers cannot steer a
 * request to a private address between the URL check and the connect.
 */
export function createHttpSender(guard: AddressGuard, dns: HostLookup) {
  const guardedLookup: LookupFunction = (hostname, options, callback) => {
    const answered = (error: Error | null, addresses: LookupAddress[] = []) => {
      if (error) return callback(error, '', 0);
      for (const { address } of addresses) {
        const reason = guard(address);
        if (reason) return callback(new BlockedAddress(`${hostname} resolves to ${address}: ${reason}`), '', 0);
      }
      if (options.all) return (callback as unknown as (e: null, a: LookupAddress[]) => void)(null, addresses);
      const [first] = addresses;
      return callback(null, first!.address, first!.family);
    };
    dns.hostAddresses(hostname).then((found) => {
      const addresses = found
        .map((address) => ({ address, family: isIP(address) }))
        .filter(({ family }) => !options.family || family === options.family);
      if (addresses.length > 0) return answered(null, addresses);
      const notFound = Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND', hostname });
      return answered(notFound);
    }, answered);
  };
  // `timeout` closes only idle connections: one in use keeps it for the request's own timer to end.
  const keptAlive = { keepAlive: true, maxSockets: 256, timeout: IDLE_CONNECTION_MS };
  const agents = {
    'http:': new http.Agent({ ...keptAlive, lookup: guardedLookup } as http.AgentOptions),
    'https:': new https.Agent({ ...keptAlive, lookup: guardedLookup } as https.AgentOptions),
  };

  async function post(request: HttpPost): Promise<HttpOutcome> {
    const started = performance.now();
    const elapsed = () => Math.round(performance.now() - started);
    let url: URL;
    try {
      url = new URL(request.url);
    } catch {
      return { headers: {}, body: '', durationMs: 0, error: 'Invalid webhook URL', blocked: true };
    }
    const agent = agents[url.protocol as keyof typeof agents];
    if (!agent)
      return { headers: {}, body: '', durationMs: 0, error: 'Only http and https URLs are allowed', blocked: true };
    const literal = urlHost(url);
    if (isIP(literal)) {
      const reason = guard(literal);
      if (reason) return { headers: {}, body: '', durationMs: 0, error: `${literal}: ${reason}`, blocked: true };
    }

    return new Promise<HttpOutcome>((resolve) => {
      let settled = false;
      const finish = (outcome: Omit<HttpOutcome, 'durationMs'>) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        resolve({ ...outcome, durationMs: elapsed() });
      };
      const open = () =>
        (url.protocol === 'https:' ? https : http).request(url, {
          method: 'POST',
          agent,
          headers: { ...request.headers, 'Content-Length': String(Buffer.byteLength(request.body)) },
        });
      let req: http.ClientRequest;
      try {
        req = open();
      } catch (error) {
        // Headers HTTP cannot carry: every retry would fail the same way.
        resolve({ headers: {}, body: '', durationMs: 0, error: (error as Error).message, blocked: true });
        return;
      }
      /** The response, once its status line and headers arrived, and the start of its body. */
      let answered: { response: http.IncomingMessage; chunks: Buffer[] } | undefined;
      const answer = () =>
        finish({
          statusCode: answered!.response.statusCode,
          headers: answered!.response.headers,
          body: storableText(firstCharacters(Buffer.concat(answered!.chunks).toString('utf8'), RESPONSE_BODY_CHARS)),
        });
      const timer = setTimeout(() => {
        // A receiver that answered and is slow to send its body has answered: its status decides, not the timeout.
        if (answered) answer();
        else finish({ headers: {}, body: '', error: `Request timeout after ${request.timeoutMs / 1000}s` });
        req.destroy();
      }, request.timeoutMs);
      const send = (sending: http.ClientRequest) => {
        req = sending;
        sending.on('error', (error: NodeJS.ErrnoException) => {
          // A kept-alive connection the receiver closed (its idle timeout ran out) as the request went out on it: the
          // request goes again on another connection, as Node's documentation advises, rather than failing the attempt.
          if (!settled && sending.reusedSocket && !answered && error.code === 'ECONNRESET') return send(open());
          const blocked = error instanceof BlockedAddress;
          finish({ headers: {}, body: '', error: blocked ? error.message : describeNetworkError(error), blocked });
        });
        sending.on('response', (response) => {
          answered = { response, chunks: [] };
          const { chunks } = answered;
          let read = 0;
          response.on('data', (chunk: Buffer) => {
            if (read >= MAX_READ_BYTES) return;
            chunks.push(chunk);
            read += chunk.length;
            if (read >= MAX_READ_BYTES) {
              answer();
              response.destroy();
            }
          });
          response.on('end', answer);
          response.on('error', answer);
          response.on('close', answer);
        });
        sending.end(request.body);
      };
      send(req);
    });
  }

  return {
    post,
    close() {
      agents['http:'].destroy();
      agents['https:'].destroy();
    },
  };
}

export type HttpSender = ReturnType<typeof createHttpSender>;

function describeNetworkError(error: NodeJS.ErrnoException): string {
  if (error.code === 'ECONNREFUSED')
    return `Connection refused (${error.message.replace(/^connect ECONNREFUSED /, '')})`;
  if (error.code === 'ENOTFOUND') return `Host not found (${error.message.replace(/^getaddrinfo ENOTFOUND /, '')})`;
  return error.message || String(error.code ?? 'Network error');
}
