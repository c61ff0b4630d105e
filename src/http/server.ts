import SerializerSelector from '@fastify/fast-json-stringify-compiler';
import formbody from '@fastify/formbody';
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import Fastify, { type FastifyInstance, LogController } from 'fastify';
import type { AccountsService } from '../accounts/index.ts';
import type { EmailAddressesService } from '../addresses/index.ts';
import type { AlertsService } from '../alerts/index.ts';
import { consoleRoutes } from '../console/index.ts';
import type { Logger } from '../core/index.ts';
import type { DeliveryService } from '../delivery/index.ts';
import type { DomainsService } from '../domains/index.ts';
import type { EndpointsService, WebhooksService } from '../endpoints/index.ts';
import type { EventHub } from '../events/index.ts';
import type { MailService, ThreadsService } from '../mail/index.ts';
import type { ErasureService, RetentionService } from '../retention/index.ts';
import type { BlocklistService, ExplainInput, RoutingExplanation, RulesService } from '../rules/index.ts';
import { logAnsweredRequest } from './access-log.ts';
import type { ApiRateLimit } from './auth.ts';
import { bodiesUncoerced, noteFormBody } from './body-validation.ts';
import { serializersOnFirstUse } from './compile-on-first-use.ts';
import { type HttpLimits, limitOptions } from './connection-limits.ts';
import { refuseEncodedBodies } from './content-encoding.ts';
import { e2Routes } from './e2/routes.ts';
import { emailReceivedWebhook } from './email-received-doc.ts';
import { handleError } from './errors.ts';
import { refuseJsonSentAsForm } from './json-content-type.ts';
import { type MetricsExposure, metricsRoute } from './metrics-route.ts';
import { acceptMultipartBodies } from './multipart-body.ts';
import { rejectNulCharacters } from './reject-nul.ts';
import { v2Routes } from './v2/routes.ts';

export interface HttpServices {
  accounts: AccountsService;
  domains: DomainsService;
  deliveries: DeliveryService;
  endpoints: EndpointsService;
  webhooks: WebhooksService;
  addresses: EmailAddressesService;
  mail: MailService;
  threads: ThreadsService;
  rules: RulesService;
  blocklist: BlocklistService;
  /** Retention periods and legal holds of the account, its domains and addresses. */
  retention: RetentionService;
  /** Erase by query and its audit records. */
  erasures: ErasureService;
  /** Health alerts: the list, acknowledgement and the account's alert settings. */
  alerts: AlertsService;
  /** A dry run of what SMTP, routing and the account's rules would do with one recipient. */
  explainRouting(accountId: string, input: ExplainInput): Promise<RoutingExplanation>;
  /** Resolves when the database answers; used by /readyz. */
  ping(): Promise<void>;
  /** The account event streams (GET /api/v2/events). */
  events: Pick<EventHub, 'subscribe'>;
  /** Requests per minute per API key on /api/e2 and /api/v2; unset: no limit. */
  apiRateLimit?: ApiRateLimit;
  /** `/metrics` on this server; unset when metrics are off or served on a port of their own. */
  metrics?: MetricsExposure;
}

const BODY_LIMIT = 2 * 1024 * 1024;

/**
 * How long /readyz waits for the database. A database that stopped answering (a partition, a stalled server) would
 * otherwise hold the probe until TCP gives up, minutes later; not answering in this time is not ready.
 */
const READY_TIMEOUT_MS = 2000;

/**
 * The policy of /docs (page, scripts and the document it renders): Swagger UI's files are served from here and the
 * document has no servers of its own, so it needs no other origin, and works offline. Inline styles are React's.
 */
const DOCS_CONTENT_SECURITY_POLICY = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "frame-ancestors 'none'",
  "form-action 'none'",
].join('; ');

function rejectAfter(ms: number): Promise<never> {
  return new Promise((_resolve, reject) => setTimeout(() => reject(new Error('timed out')), ms).unref());
}

export async function buildHttpServer(
  services: HttpServices,
  logger: Logger,
  version: string,
  limits: HttpLimits & { console: boolean },
) {
  const app = Fastify({
    loggerInstance: logger,
    bodyLimit: BODY_LIMIT,
    ...limitOptions(limits),
    // What the router refuses before a route is found is answered like every other error.
    frameworkErrors: handleError,
    // A filename in an attachment's URL may be 255 bytes, percent-encoded.
    routerOptions: { maxParamLength: 1024 },
    schemaController: {
      compilersFactory: {
        buildValidator: bodiesUncoerced,
        buildSerializer: serializersOnFirstUse(SerializerSelector()),
      },
    },
    logController: new LogController({ disableRequestLogging: true }),
  }).withTypeProvider<TypeBoxTypeProvider>();
  app.server.maxConnections = limits.maxConnections;

  // The SDKs send `Content-Type: application/json` with an empty body on GET, DELETE and bodyless POSTs.
  const parseJson = app.getDefaultJsonParser('error', 'error');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) => {
    if ((body as string).trim() === '') return done(null, undefined);
    parseJson(request, body as string, done);
  });
  app.addHook('onResponse', logAnsweredRequest);
  app.addHook('preParsing', refuseEncodedBodies);
  await app.register(formbody);
  await acceptMultipartBodies(app as unknown as FastifyInstance, BODY_LIMIT);
  app.addHook('preValidation', rejectNulCharacters);
  app.addHook('preValidation', refuseJsonSentAsForm);
  app.addHook('preValidation', noteFormBody);

  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Mailroom API',
        version,
        description: 'Email receiving and routing. Wire-compatible with Inbound.',
      },
      components: { securitySchemes: { bearerAuth: { type: 'http', scheme: 'bearer' } } },
      security: [{ bearerAuth: [] }],
      webhooks: { emailReceived: emailReceivedWebhook },
    },
  });
  await app.register(swaggerUi, { routePrefix: '/docs', staticCSP: DOCS_CONTENT_SECURITY_POLICY });

  app.setErrorHandler(handleError);
  app.setNotFoundHandler((request, reply) =>
    reply.code(404).send({ error: `Route ${request.method} ${request.url.split('?')[0]} not found` }),
  );

  app.get('/healthz', { schema: { hide: true } }, async () => ({ status: 'ok' }));
  app.get('/readyz', { schema: { hide: true } }, async (_request, reply) => {
    try {
      await Promise.race([services.ping(), rejectAfter(READY_TIMEOUT_MS)]);
      return { status: 'ready' };
    } catch {
      return reply.code(503).send({ error: 'Database unavailable' });
    }
  });

  const documentVersions = { '/api/e2': '2.0.0', '/api/v2': version };
  for (const [prefix, documentVersion] of Object.entries(documentVersions)) {
    app.get(`${prefix}/openapi.json`, { schema: { hide: true } }, async () => {
      const document = app.swagger() as { paths?: Record<string, unknown> };
      const paths = Object.fromEntries(
        Object.entries(document.paths ?? {}).filter(([path]) => path.startsWith(`${prefix}/`)),
      );
      return { ...document, info: { ...(document as { info: object }).info, version: documentVersion }, paths };
    });
  }
  if (services.metrics) await metricsRoute(app as unknown as FastifyInstance, services.metrics, services.accounts);
  await app.register(e2Routes, { ...services, prefix: '/api/e2' });
  await app.register(v2Routes, { ...services, prefix: '/api/v2' });
  if (limits.console) await app.register(consoleRoutes);
  return app as unknown as FastifyInstance;
}
