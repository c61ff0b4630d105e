import type { FastifyRequest } from 'fastify';

/**
 * A `preValidation` hook for routes whose body fields are all optional: the SDKs send bodyless requests with
 * `Content-Type: application/json`, which arrive as an undefined body; treat that as `{}` so the route answers
 * with its own error (`Missing required fields`) or, for updates, changes nothing.
 */
export async function emptyBodyAsObject(request: FastifyRequest) {
  if (request.body === undefined || request.body === null) request.body = {};
}
