import type { FastifyRequest } from 'fastify';

/**
 * A `preValidation` hook for Inbound's mail lists (e2's and `GET /api/v2/mail`), which read an empty query parameter
 * as one not given (their `limit || 50`, `if (address)`): a client passing an unset filter as `?address=` gets the
 * unfiltered list. Erase by query takes a body and never goes through it, so an empty filter there widens nothing.
 */
export async function emptyQueryAsUnset(request: FastifyRequest) {
  const query = request.query as Record<string, unknown>;
  for (const [name, value] of Object.entries(query)) if (value === '') delete query[name];
}
