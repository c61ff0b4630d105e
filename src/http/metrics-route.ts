import Fastify, { type FastifyInstance, LogController } from 'fastify';
import type { AccountsService } from '../accounts/index.ts';
import type { Logger } from '../core/index.ts';
import { requireApiKey } from './auth.ts';
import { type HttpLimits, limitOptions } from './connection-limits.ts';
import { handleError } from './errors.ts';

/** The Prometheus text of the app's metrics (src/metrics). */
export interface MetricsSource {
  contentType: string;
  render(): Promise<string>;
}

/** How `/metrics` is served: `api_key` asks for any account's key, like the API (the numbers are not per account). */
export interface MetricsExposure {
  source: MetricsSource;
  auth: 'api_key' | 'none';
}

/** `GET /metrics`, in a scope of its own so that its authentication is its own. */
export async function metricsRoute(app: FastifyInstance, exposure: MetricsExposure, accounts: AccountsService) {
  await app.register(async (scope) => {
    if (exposure.auth === 'api_key') requireApiKey(scope, accounts);
    scope.get('/metrics', { schema: { hide: true } }, async (_request, reply) =>
      reply.type(exposure.source.contentType).send(await exposure.source.render()),
    );
  });
}

/** The listener of METRICS_PORT: `/metrics` and nothing else, its clients held to the HTTP port's limits. */
export async function buildMetricsServer(
  exposure: MetricsExposure,
  accounts: AccountsService,
  logger: Logger,
  limits: HttpLimits,
) {
  const app = Fastify({
    loggerInstance: logger,
    ...limitOptions(limits),
    logController: new LogController({ disableRequestLogging: true }),
  });
  app.server.maxConnections = limits.maxConnections;
  app.setErrorHandler(handleError);
  app.setNotFoundHandler((request, reply) =>
    reply.code(404).send({ error: `Route ${request.method} ${request.url.split('?')[0]} not found` }),
  );
  await metricsRoute(app as unknown as FastifyInstance, exposure, accounts);
  return app as unknown as FastifyInstance;
}
