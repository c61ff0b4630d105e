import type { FastifyRequest } from 'fastify';

/** What a client that sent JSON under another content type, or none, is told. */
export const SEND_JSON_CONTENT_TYPE = 'Send JSON bodies with the header Content-Type: application/json';

/**
 * A `preValidation` hook answering 415 for JSON sent as a form: `curl -d '{...}'` labels its body
 * `application/x-www-form-urlencoded`, which parses into one field named after the JSON text, and the route would
 * then report a missing field instead. A real form's first field name never starts with `{` or `[`.
 */
export async function refuseJsonSentAsForm(request: FastifyRequest) {
  if (!request.headers['content-type']?.toLowerCase().startsWith('application/x-www-form-urlencoded')) return;
  const body = request.body;
  if (body === null || typeof body !== 'object') return;
  const first = Object.keys(body)[0];
  if (first?.startsWith('{') || first?.startsWith('[')) {
    throw Object.assign(new Error(`Request body is JSON but Content-Type is not: ${SEND_JSON_CONTENT_TYPE}`), {
      statusCode: 415,
    });
  }
}
