import multipart from '@fastify/multipart';
import type { FastifyError, FastifyInstance } from 'fastify';
import { Invalid } from '../core/index.ts';

/**
 * Accepts `multipart/form-data` bodies as key-value objects (a repeated field becomes an array, a file a Buffer).
 * The parser (busboy) reports a malformed form with plain errors, so they are turned into a 400 here, where it is
 * known that the form is what failed; the plugin's own errors carry their 4xx status already.
 */
export async function acceptMultipartBodies(app: FastifyInstance, fileSizeLimit: number) {
  await app.register(multipart, { limits: { fileSize: fileSizeLimit } });
  app.addHook('preValidation', async (request) => {
    if (!request.isMultipart()) return;
    const body: Record<string, unknown> = {};
    try {
      for await (const part of request.parts()) {
        const value = part.type === 'file' ? await part.toBuffer() : part.value;
        const previous = body[part.fieldname];
        if (previous === undefined) body[part.fieldname] = value;
        else if (Array.isArray(previous)) previous.push(value);
        else body[part.fieldname] = [previous, value];
      }
    } catch (error) {
      if ((error as FastifyError).statusCode) throw error;
      throw new Invalid('Malformed multipart/form-data body');
    }
    request.body = body;
  });
}
