/** Socket errors of a store that cannot be reached, or that went away mid-request. */
const NETWORK_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EAI_AGAIN',
]);

/**
 * A disk full or over its quota, under the blob store or SQLite, and a process or system out of file descriptors:
 * the same request succeeds once space or descriptors are freed.
 */
const EXHAUSTION_CODES = new Set(['ENOSPC', 'EDQUOT', 'EMFILE', 'ENFILE']);
/** node:sqlite's `errcode` for SQLITE_FULL, which SQLite answers when the disk had no room for a write. */
const SQLITE_FULL = 13;

/**
 * PostgreSQL's SQLSTATEs for a server that is gone or not taking connections: class 08 (connection exception),
 * an administrator's or a crash's shutdown, a server still starting, and no connection slot left.
 */
const POSTGRES_OUTAGE = /^(08...|57P0[1-3]|53300)$/;

/** What node-postgres says, with no code, when its connection ends under it or cannot be had in time. */
const POSTGRES_DRIVER_MESSAGES =
  /^(Connection terminated( unexpectedly| due to connection timeout)?|timeout exceeded when trying to connect|Client has encountered a connection error and is not queryable)$/;

/**
 * Whether `error` says that a store Mailroom depends on (PostgreSQL, the S3 blob store) cannot be reached now, or
 * that the disk under one (SQLite, the filesystem blob store) is full or the process out of file descriptors, as
 * opposed to a bug: the request can succeed once it is back, so the edges answer "try again" (HTTP 503, SMTP 4xx).
 * An error caused by an outage (a COMMIT whose outcome is unknown because the disk was full) is one too.
 */
export function isOutage(error: unknown, causesLeft = 3): boolean {
  if (!(error instanceof Error)) return false;
  if (causesLeft > 0 && isOutage(error.cause, causesLeft - 1)) return true;
  const { code, errcode, $fault } = error as { code?: unknown; errcode?: unknown; $fault?: unknown };
  if (typeof code === 'string' && (NETWORK_CODES.has(code) || POSTGRES_OUTAGE.test(code))) return true;
  if ((typeof code === 'string' && EXHAUSTION_CODES.has(code)) || errcode === SQLITE_FULL) return true;
  if (POSTGRES_DRIVER_MESSAGES.test(error.message)) return true;
  // The AWS SDK's verdict on an S3 answer: the server's fault (500, 503 Slow Down), or no answer in time.
  return $fault === 'server' || error.name === 'TimeoutError';
}
