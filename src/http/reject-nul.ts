import type { FastifyRequest } from 'fastify';
import { Invalid } from '../core/index.ts';

/**
 * A `preValidation` hook refusing NUL characters anywhere in the path parameters, query or body: PostgreSQL cannot
 * hold them in text, so they would otherwise fail there (and only there); no field of the API has a use for them.
 */
export async function rejectNulCharacters(request: FastifyRequest) {
  for (const [part, value] of [
    ['params', request.params],
    ['querystring', request.query],
    ['body', request.body],
  ] as const) {
    const where = pathToNul(value);
    if (where !== undefined) throw new Invalid(`Invalid request: ${part}${where} must not contain NUL characters`);
  }
}

/** The JSON pointer of the first string (or key) holding a NUL; walked with a stack, as bodies may nest deeply. */
function pathToNul(root: unknown): string | undefined {
  const pending: Array<[unknown, string]> = [[root, '']];
  while (pending.length > 0) {
    const [value, path] = pending.pop()!;
    if (typeof value === 'string') {
      if (value.includes('\u0000')) return path;
    } else if (value !== null && typeof value === 'object' && !Buffer.isBuffer(value)) {
      for (const [key, item] of Object.entries(value)) {
        if (key.includes('\u0000')) return path;
        pending.push([item, `${path}/${key}`]);
      }
    }
  }
  return undefined;
}
