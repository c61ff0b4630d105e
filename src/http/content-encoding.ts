import type { FastifyReply, FastifyRequest } from 'fastify';

/**
 * A `preParsing` hook answering 415 for a body sent with a content coding (`gzip`, `br`...): none is decoded here,
 * so a compressed body would be parsed as if it were plain and refused as malformed JSON, and a plain one mislabelled
 * would be taken. RFC 9110 (15.5.16) asks for 415 with the codings accepted, here none but identity.
 */
export async function refuseEncodedBodies(request: FastifyRequest, reply: FastifyReply) {
  const coding = request.headers['content-encoding']?.trim().toLowerCase();
  if (!coding || coding === 'identity') return;
  const hasBody = request.headers['transfer-encoding'] !== undefined || Number(request.headers['content-length']) > 0;
  if (!hasBody) return;
  reply.header('accept-encoding', 'identity');
  throw Object.assign(new Error(`Unsupported Content-Encoding ${coding}: send the body uncompressed`), {
    statusCode: 415,
  });
}
