import type { FastifyReply, FastifyRequest } from 'fastify';

/**
 * What load balancers, orchestrators and Prometheus ask every few seconds: logged at debug, so it does not drown the
 * rest. By route, so that a query string does not change the level.
 */
const PROBES = new Set(['/healthz', '/readyz', '/metrics']);

/**
 * One line per answered request, as a web server's access log: what was asked, from where and by which account, the
 * status and how long it took. An event stream, which its handler takes over, is not answered through Fastify.
 */
export async function logAnsweredRequest(request: FastifyRequest, reply: FastifyReply) {
  const entry = {
    method: request.method,
    url: request.url,
    statusCode: reply.statusCode,
    responseTimeMs: Math.round(reply.elapsedTime * 10) / 10,
    clientIp: request.ip,
    ...(request.account ? { accountId: request.account.id } : {}),
  };
  request.log[PROBES.has(request.routeOptions.url ?? '') ? 'debug' : 'info'](entry, 'request completed');
}
