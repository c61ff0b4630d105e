import { answerClientError } from './errors.ts';

/** How slow and how many clients may be; only the arrival of a request is timed, never the answer. */
export interface HttpLimits {
  requestTimeoutMs: number;
  keepAliveTimeoutMs: number;
  maxConnections: number;
}

/** How often Node looks for requests past their timeout, so that a timeout is enforced within this of falling due. */
const TIMEOUT_CHECK_INTERVAL_MS = 500;

/**
 * The Fastify options that hold a listener's clients to the limits (every listener of the process: a slow client left
 * unbounded on one would use up the file descriptors the others need). `maxConnections` is set on the server itself.
 */
export function limitOptions(limits: HttpLimits) {
  return {
    requestTimeout: limits.requestTimeoutMs,
    keepAliveTimeout: limits.keepAliveTimeoutMs,
    // Node checks headersTimeout against its own requestTimeout when the server is made, before Fastify sets it.
    http: {
      requestTimeout: limits.requestTimeoutMs,
      headersTimeout: limits.requestTimeoutMs,
      connectionsCheckingInterval: Math.min(TIMEOUT_CHECK_INTERVAL_MS, limits.requestTimeoutMs),
    },
    clientErrorHandler: answerClientError,
  };
}
