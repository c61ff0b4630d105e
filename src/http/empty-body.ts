import type { FastifyRequest } from 'fastify';
import { Type } from 'typebox';

/**
 * A `preValidation` hook for routes whose body fields are all optional: the SDKs send bodyless requests with
 * `Content-Type: application/json`, which arrive as an undefined body; treat that as `{}` so the route answers
 * with its own error (`Missing required fields`) or, for updates, changes nothing.
 */
export async function emptyBodyAsObject(request: FastifyRequest) {
  if (request.body === undefined || request.body === null) request.body = {};
}

/**
 * An optional string field where null means "clear it". Null comes first: Ajv coerces types branch by branch,
 * so with the string branch first a null would be turned into "" before the null branch is tried.
 */
export const ClearableString = Type.Optional(Type.Union([Type.Null(), Type.String()]));
