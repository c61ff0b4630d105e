import type { Socket } from 'node:net';
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { AppError, Busy, Conflict, Invalid, isOutage, LimitReached, NotFound, NotSupported } from '../core/index.ts';
import { SEND_JSON_CONTENT_TYPE } from './json-content-type.ts';

const STATUS_BY_ERROR = new Map<abstract new (...args: never[]) => AppError, number>([
  [NotFound, 404],
  [Invalid, 400],
  [Conflict, 409],
  [Busy, 409],
  [LimitReached, 403],
  [NotSupported, 501],
]);

/** The Retry-After of a 503 answered while a store is out of reach: outages worth riding out last seconds. */
const OUTAGE_RETRY_AFTER_SECONDS = 5;

/** Fastify's own client-side errors, answered with a plain sentence instead of its internal codes. */
const FRAMEWORK_ERRORS: Record<
  string,
  (error: FastifyError, request: FastifyRequest) => { status: number; message: string }
> = {
  FST_ERR_CTP_INVALID_JSON_BODY: () => ({ status: 400, message: 'Malformed JSON in request body' }),
  FST_ERR_CTP_EMPTY_JSON_BODY: () => ({ status: 400, message: 'Malformed JSON in request body' }),
  FST_ERR_CTP_BODY_TOO_LARGE: () => ({ status: 413, message: 'Request body is too large' }),
  // A body without any Content-Type is most often JSON from a client that did not label it.
  FST_ERR_CTP_INVALID_MEDIA_TYPE: (_error, request) =>
    request.headers['content-type'] === undefined
      ? { status: 415, message: `Request body has no Content-Type: ${SEND_JSON_CONTENT_TYPE}` }
      : { status: 415, message: 'Unsupported Content-Type' },
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: () => ({ status: 400, message: 'Content-Length does not match the body' }),
  FST_ERR_BAD_URL: () => ({ status: 400, message: 'Malformed URL: a path segment is not valid percent-encoding' }),
  FST_ERR_MAX_PARAM_LENGTH: () => ({ status: 414, message: 'A path segment of the URL is too long' }),
};

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The `error` text this route answers with on an unexpected failure (the spec gives some routes their own). */
    internalErrorMessage?: string;
  }
}

export function handleError(error: FastifyError, request: FastifyRequest, reply: FastifyReply) {
  if (error instanceof AppError) {
    const status = STATUS_BY_ERROR.get(error.constructor as typeof AppError) ?? 400;
    // The Stainless clients retry 409 and 5xx answers unless told: what is not implemented stays so, and a clash
    // with stored state (a duplicate) stays until the state changes; only a Busy one passes by itself.
    if (status === 501 || status === 409) reply.header('x-should-retry', String(error instanceof Busy));
    return reply.code(status).send({ error: error.message, ...error.extras });
  }
  if (error.validation) {
    const first = error.validation[0];
    const where = `${error.validationContext ?? 'request'}${first?.instancePath ?? ''}`;
    const unknown = first?.keyword === 'additionalProperties' ? first.params.additionalProperty : undefined;
    if (typeof unknown === 'string') {
      return reply.code(400).send({ error: `Invalid request: ${where}/${unknown} is not a known property` });
    }
    return reply.code(400).send({ error: `Invalid request: ${where} ${first?.message ?? 'is invalid'}` });
  }
  const framework = error.code ? FRAMEWORK_ERRORS[error.code] : undefined;
  if (framework) {
    const { status, message } = framework(error, request);
    return reply.code(status).send({ error: message });
  }
  if (error.statusCode && error.statusCode >= 400 && error.statusCode < 500) {
    return reply.code(error.statusCode).send({ error: error.message });
  }
  if (isOutage(error)) {
    // The database or the blob store is out of reach: no bug, and the same request succeeds once it is back.
    request.log.warn({ err: error }, 'store unavailable');
    return reply
      .code(503)
      .header('retry-after', String(OUTAGE_RETRY_AFTER_SECONDS))
      .send({ error: 'Service temporarily unavailable, try again shortly' });
  }
  request.log.error({ err: error }, 'unhandled error');
  return reply.code(500).send({ error: request.routeOptions.config.internalErrorMessage ?? 'Internal server error' });
}

const CLIENT_ERRORS: Record<string, { status: number; reason: string; message: string }> = {
  ERR_HTTP_REQUEST_TIMEOUT: { status: 408, reason: 'Request Timeout', message: 'Request took too long to arrive' },
  HPE_HEADER_OVERFLOW: {
    status: 431,
    reason: 'Request Header Fields Too Large',
    message: 'Request headers are too large',
  },
};

/**
 * Answers what Node refuses before a request reaches Fastify (a request arriving too slowly, bad or oversized
 * headers) in the API's error shape, then closes the connection. Once an answer has been written on the connection
 * (a 401 while the body still trickles in), nothing more is written: it is closed.
 */
export function answerClientError(error: NodeJS.ErrnoException, socket: Socket) {
  if (error.code === 'ECONNRESET' || socket.destroyed) return;
  const { status, reason, message } = CLIENT_ERRORS[error.code ?? ''] ?? {
    status: 400,
    reason: 'Bad Request',
    message: 'Malformed HTTP request',
  };
  if (socket.writable && socket.bytesWritten === 0) {
    const body = JSON.stringify({ error: message });
    socket.write(
      `HTTP/1.1 ${status} ${reason}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n` +
        `Connection: close\r\n\r\n${body}`,
    );
  }
  socket.destroy(error);
}
