import { readFileSync } from 'node:fs';
import type { FastifyInstance } from 'fastify';
import { AccountsService, DEFAULT_ACCOUNT } from './accounts/index.ts';
import { EmailAddressesService } from './addresses/index.ts';
import { createAlertSystem, startAlertSweeper } from './alerts/index.ts';
import { type BlobStore, openBlobStore } from './blobs/index.ts';
import type { Config } from './config/index.ts';
import { type Clock, createLogger, FixedWindowRateLimiter, type Logger, systemClock } from './core/index.ts';
import { type DatabaseHandle, lockDataDir, migrateToLatest, openDatabase, startWalCheckpointer } from './db/index.ts';
import { createDeliverySystem, type DeliverySystem, deliveredSince, deliveryHistory } from './delivery/index.ts';
import { createDnsLookup } from './dns/index.ts';
import { DomainHealth, DomainsService, startDomainVerifier } from './domains/index.ts';
import { assertPublicUrl, connectionGuard, EndpointsService, WebhooksService } from './endpoints/index.ts';
import { deleteEmailEvents, EventHub } from './events/index.ts';
import { buildHttpServer, buildMetricsServer } from './http/index.ts';
import {
  AccountVolumeWatch,
  cleanStopMarker,
  createIngestService,
  type IngestService,
  removeOrphanBlobs,
} from './ingest/index.ts';
import { HtmlCleaner, MailService, receivedSince, ThreadsService } from './mail/index.ts';
import { createMetrics } from './metrics/index.ts';
import { extractAttachment, hashAttachments } from './mime/index.ts';
import { ErasureService, MailEraser, RetentionService, startRetentionSweeper } from './retention/index.ts';
import { RoutingService, RoutingWritesPlugin } from './routing/index.ts';
import { BlocklistService, explainRouting, RuleEvaluator, RulesService } from './rules/index.ts';
import { attachSearchDatabase, PostgresMailPages, SqliteMailPages, startSearchIndex } from './search/index.ts';
import { createSmtpReceiver, loadTlsMaterial } from './smtp/index.ts';

export const VERSION: string = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')).version;

export interface App {
  config: Readonly<Config>;
  logger: Logger;
  database: DatabaseHandle;
  accounts: AccountsService;
  domains: DomainsService;
  endpoints: EndpointsService;
  webhooks: WebhooksService;
  addresses: EmailAddressesService;
  /** Resolves envelope recipients to accept/reject and a delivery target (SMTP and ingest use it). */
  router: RoutingService;
  /** Raw messages (fs or S3), read by attachments and forwarding. */
  blobs: BlobStore;
  /** Stores received mail; `ingest.onCommitted(listener)` tells when new mail and its delivery jobs are committed. */
  ingest: IngestService;
  /** The outbox worker of this process and the delivery operations (retry, test, replay, log). */
  delivery: DeliverySystem;
  /** Stored mail: lists, search, reads, read/archive state, attachments. */
  mail: MailService;
  http: FastifyInstance;
  /**
   * Starts listening and the background jobs. Returns the bound HTTP address and SMTP port, and the address of the
   * metrics listener when METRICS_PORT gives it one.
   */
  start(): Promise<{ httpUrl: string; smtpPort: number; metricsUrl?: string }>;
  close(): Promise<void>;
}

/** A server of the app could not listen (e.g. EADDRINUSE); `server` says which, so start-up can name its setting. */
export class ListenError extends Error {
  readonly server: 'http' | 'smtp' | 'metrics';
  readonly port: number;

  constructor(server: 'http' | 'smtp' | 'metrics', port: number, cause: unknown) {
    super(`${server} server could not listen on port ${port}`, { cause });
    this.server = server;
    this.port = port;
  }
}

export interface AppOptions {
  clock?: Clock;
  logger?: Logger;
}

/** The one place that builds every capability and hands each its dependencies. */
export async function createApp(config: Readonly<Config>, options: AppOptions = {}): Promise<App> {
  const logger = options.logger ?? createLogger(config.logLevel);
  const clock = options.clock ?? systemClock;
  // The event loop's connection searches, so on SQLite it has the search database attached. The router hears of routing
  // changes through the plugin (own) and NOTIFY (others') on PostgreSQL, and reads a trigger-kept counter on SQLite.
  const routingWrites = new RoutingWritesPlugin();
  const dataDirLock = lockDataDir(config.dataDir, config.database.kind, config.blobs.kind);
  const database = await openDatabase(config.database, {
    attach: attachSearchDatabase,
    plugins: config.database.kind === 'postgres' ? [routingWrites] : [],
    keepConnections: config.database.kind === 'postgres' ? config.database.poolSize : 0,
    onIdleConnectionLost: (error) => logger.warn({ err: error }, 'PostgreSQL closed an idle pooled connection'),
  });
  await migrateToLatest(database);
  const checkpointer = config.database.kind === 'sqlite' ? startWalCheckpointer(config.database, logger) : undefined;
  const searchIndexer = startSearchIndex(config.database, database.db, logger);
  const { db, postgres } = database;
  const blobs = await openBlobStore(config.blobs);

  const dns = createDnsLookup(config.dnsServers);
  // Read at scrape time; `delivery` exists by the time anything can scrape.
  const metrics = config.metrics.enabled
    ? createMetrics({ clock, logger, deliveryQueue: () => delivery.queueState() })
    : undefined;
  /** Hits per key and minute in this process's memory; undefined when `limit` is 0 (off). */
  const perMinute = (limit: number) =>
    limit > 0 ? new FixedWindowRateLimiter({ limit, windowMs: 60_000, clock }) : undefined;
  // The event stream's reader; whoever commits events calls eventsAppended after the commit.
  const events = new EventHub({
    db,
    clock,
    logger,
    ...(postgres ? { postgres } : {}),
  });
  const eventsAppended = () => events.appended();
  const accounts = new AccountsService(db, clock);
  const destinationChecks = {
    db,
    clock,
    dns,
    allowPrivateDestinations: config.allowPrivateDestinations,
    deliveries: deliveryHistory(db),
  };
  const endpoints = new EndpointsService(destinationChecks);
  const webhooks = new WebhooksService(destinationChecks);
  const domains = new DomainsService({
    db,
    dns,
    clock,
    settings: { mxHost: config.mxHost, giveUpAfterMs: config.domainVerification.giveUpAfterMs },
    endpoints,
    logger,
    eventsAppended,
    observer: metrics?.domains,
  });
  const addresses = new EmailAddressesService({
    db,
    clock,
    targets: {
      endpoints: (accountId, ids) => endpoints.targets(accountId, ids),
      webhooks: (accountId, ids) => webhooks.targets(accountId, ids),
    },
  });
  const router = new RoutingService({
    db,
    subaddressing: config.subaddressing,
    logger,
    // The account the first start creates is the operator's (see bootstrapAccess).
    operatorAccountId: async () => (await accounts.findByName(DEFAULT_ACCOUNT))?.id,
    ...(postgres ? { postgres: { ...postgres, writes: routingWrites } } : {}),
  });
  const ruleEvaluator = new RuleEvaluator(db);
  const findEndpoint = (accountId: string, id: string) => endpoints.summary(accountId, id);
  const rules = new RulesService({ db, clock, findEndpoint, evaluator: ruleEvaluator });
  const blocklist = new BlocklistService({ db, clock, evaluator: ruleEvaluator });
  const explainDependencies = {
    router,
    evaluator: ruleEvaluator,
    findEndpoint,
    findWebhook: async (accountId: string, id: string) => (await webhooks.targets(accountId, [id])).get(id),
  };
  const ingest = createIngestService({
    database: config.database,
    blobs,
    resolveDns: dns.raw,
    dnsServers: config.dnsServers,
    spamd: config.spamd,
    analysisWorkers: config.smtp.ingestWorkers,
    logger,
    mxHost: config.mxHost,
    rules: ruleEvaluator,
    // Called per message once started, when `delivery` below exists.
    newJobLease: () => delivery.newJobLease(),
  });
  const smtp = createSmtpReceiver({
    router,
    ingest,
    logger,
    hostname: config.mxHost,
    maxMessageBytes: config.smtp.maxMessageBytes,
    maxBufferedBytes: config.smtp.maxBufferedBytes,
    maxConnections: config.smtp.maxConnections,
    maxConnectionsPerIp: config.smtp.maxConnectionsPerIp,
    minDataRateBytesPerSecond: config.smtp.minDataRateBytesPerSecond,
    dataRateWindowMs: config.smtp.dataRateWindowMs,
    idleTimeoutMs: config.smtp.idleTimeoutMs,
    connectionTimeoutMs: config.smtp.connectionTimeoutMs,
    messageRateLimit: perMinute(config.rateLimits.smtpMessagesPerMinute),
    observer: metrics?.smtp,
    tls: await loadTlsMaterial({
      dataDir: config.dataDir,
      hostname: config.mxHost,
      certPath: config.smtp.tlsCertPath,
      keyPath: config.smtp.tlsKeyPath,
    }),
  });
  // The SSRF rule again, on the address each webhook request or direct forward actually connects to.
  const guard = connectionGuard(config.allowPrivateDestinations);
  const domainHealth = new DomainHealth({
    db,
    dns,
    clock,
    mxHost: config.mxHost,
    logger,
    eventsAppended,
  });
  const targetsOf = (type: 'endpoint' | 'webhook') => (type === 'endpoint' ? endpoints : webhooks);
  const alertSystem = createAlertSystem({
    db,
    clock,
    logger,
    sources: {
      recheckDomains: (intervalMs) => domainHealth.recheckDue(intervalMs),
      domainVerified: (accountId, domainId) => domainHealth.isVerified(accountId, domainId),
      inboxes: async (accountId) => [
        ...(await addresses.receiving(accountId)).map(({ id, address, since }) => ({
          subject: { type: 'address' as const, id, name: address },
          since,
        })),
        ...(await domainHealth.receiving(accountId)).map(({ id, domain, since }) => ({
          subject: { type: 'domain' as const, id, name: domain },
          since,
        })),
      ],
      receivedSince: (accountId, since) => receivedSince(db, accountId, since),
      target: async (accountId, type, id) => (await targetsOf(type).targets(accountId, [id])).get(id),
      deliveredSince: (type, id, since) => deliveredSince(db, type, id, since),
    },
    guard,
    dns,
    assertPublicUrl: (url) => assertPublicUrl(url, { allowPrivate: config.allowPrivateDestinations, dns }),
    eventsAppended,
    settings: { ...config.alerts, retryScale: config.delivery.retryScale, version: VERSION },
  });
  const alerts = alertSystem.service;
  const delivery = createDeliverySystem({
    db,
    database:
      postgres && config.database.kind === 'postgres'
        ? { kind: 'postgres', ...postgres, poolSize: config.database.poolSize }
        : { kind: 'sqlite' },
    clock,
    logger,
    dns,
    guard,
    readRaw: async (key) => Buffer.concat(await (await blobs.get(key)).toArray()),
    cleaner: { clean: ingest.cleanHtml },
    eventsAppended,
    failures: alerts.deliveryFailures,
    observer: metrics?.delivery,
    ingestSaturated: () => ingest.saturated(),
    settings: {
      ...config.delivery,
      attachmentUrl: `${config.publicUrl}/api/e2/attachments/{emailId}/parts/{index}`,
      hostname: config.mxHost,
      relayUrl: config.smtp.relayUrl,
    },
  });
  ingest.onCommitted((emails, { sanitizedHtml, raw }) => {
    const jobs = emails.flatMap((email) =>
      email.deliveries.map((job) => ({
        job,
        ...(email.stored ? { email: email.stored, raw } : {}),
        ...(sanitizedHtml === undefined ? {} : { sanitizedHtml }),
      })),
    );
    if (jobs.length > 0) delivery.jobsCommitted(jobs);
    // Each newly stored email was committed with its email.received event.
    eventsAppended();
    alerts.mailArrived(emails);
  });
  const accountVolume =
    config.rateLimits.accountMailPerHour > 0
      ? new AccountVolumeWatch({
          db,
          clock,
          logger,
          limitPerHour: config.rateLimits.accountMailPerHour,
          eventsAppended,
        })
      : undefined;
  if (accountVolume) ingest.onCommitted((emails) => accountVolume.count(emails));
  const pages = database.kind === 'sqlite' ? new SqliteMailPages(db) : new PostgresMailPages(db);
  const cleaner = new HtmlCleaner();
  const mail = new MailService({ db, pages, clock, raw: blobs, extractAttachment, hashAttachments, cleaner });
  const threads = new ThreadsService({ db, pages, clock, cleaner });
  const eraser = new MailEraser({ db, blobs, clock, deleteEmailEvents });
  const retention = new RetentionService({ db, clock, eraser });
  const erasures = new ErasureService({ db, pages, clock, eraser, logger });
  const http = await buildHttpServer(
    {
      accounts,
      domains,
      endpoints,
      webhooks,
      addresses,
      deliveries: delivery.service,
      mail,
      threads,
      rules,
      blocklist,
      retention,
      erasures,
      alerts,
      explainRouting: (accountId, input) => explainRouting(explainDependencies, accountId, input),
      ping: database.ping,
      events,
      apiRateLimit: perMinute(config.rateLimits.apiRequestsPerMinute),
      metrics:
        metrics && config.metrics.port === undefined ? { source: metrics, auth: config.metrics.auth } : undefined,
    },
    logger,
    VERSION,
    config.http,
  );
  const metricsServer =
    metrics && config.metrics.port !== undefined
      ? await buildMetricsServer({ source: metrics, auth: config.metrics.auth }, accounts, logger, config.http)
      : undefined;

  let verifier: ReturnType<typeof startDomainVerifier> | undefined;
  let retentionSweeper: ReturnType<typeof startRetentionSweeper> | undefined;
  let alertSweeper: ReturnType<typeof startAlertSweeper> | undefined;
  // The filesystem store is this process's alone, so a clean stop can vouch for its blobs (see cleanStopMarker).
  const cleanStop = config.blobs.kind === 'fs' ? cleanStopMarker(config.dataDir) : null;
  /** Set once start-up has dealt with what an earlier crash may have left, so a clean stop may say so. */
  let blobsAccountedFor = false;
  return {
    config,
    logger,
    database,
    accounts,
    domains,
    endpoints,
    webhooks,
    addresses,
    router,
    blobs,
    ingest,
    delivery,
    mail,
    http,
    async start() {
      // Blobs a crash left without a row, unless the last stop was clean; on S3 (shared by several processes) only
      // old ones, in case another process is still ingesting a recent one.
      if (await cleanStop?.take()) logger.info('last stop was clean: no orphan blobs to look for');
      else await removeOrphanBlobs(db, blobs, { olderThanMs: config.blobs.kind === 'fs' ? 0 : 15 * 60_000 });
      blobsAccountedFor = true;
      await router.start();
      const smtpPort = await smtp.listen(config.smtp.port, config.smtp.host).catch((error) => {
        throw new ListenError('smtp', config.smtp.port, error);
      });
      await events.start();
      const httpUrl = await http.listen({ port: config.http.port, host: config.http.host }).catch((error) => {
        throw new ListenError('http', config.http.port, error);
      });
      const metricsPort = config.metrics.port ?? 0;
      const metricsUrl = await metricsServer
        ?.listen({ port: metricsPort, host: config.metrics.host })
        .catch((error) => {
          throw new ListenError('metrics', metricsPort, error);
        });
      verifier = startDomainVerifier(domains, config.domainVerification.intervalMs, logger);
      retentionSweeper = startRetentionSweeper(retention, config.retention.sweepIntervalMs, logger);
      alertSweeper = startAlertSweeper(alerts, config.alerts.checkIntervalMs, logger);
      await delivery.start();
      return { httpUrl, smtpPort, ...(metricsUrl ? { metricsUrl } : {}) };
    },
    async close() {
      // SMTP sessions hear 421 while the background passes end their step in progress, not after.
      await Promise.all([verifier?.stop(), retentionSweeper?.stop(), alertSweeper?.stop(), smtp.close()]);
      await alertSystem.stop();
      await router.stop();
      const settled = await ingest.drain();
      await alerts.idle();
      await accountVolume?.settled();
      await delivery.stop();
      // Open event streams are ended as the HTTP server closes (its preClose hook); then the hub stops reading.
      await http.close();
      await cleaner.close();
      await metricsServer?.close();
      await events.stop();
      await searchIndexer.stop();
      await checkpointer?.stop();
      await database.close();
      await blobs.close();
      // Without the marker the next start only searches for orphans, so failing to write it is not a failed stop.
      if (settled && blobsAccountedFor) {
        await cleanStop?.write().catch((error) => logger.warn({ err: error }, 'clean-stop marker not written'));
      }
      dataDirLock?.release();
    },
  };
}
