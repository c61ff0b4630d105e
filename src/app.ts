import { readFileSync } from 'node:fs';
import type { FastifyInstance } from 'fastify';
import { AccountsService } from './accounts/index.ts';
import type { Config } from './config/index.ts';
import { type Clock, createLogger, type Logger, systemClock } from './core/index.ts';
import { type DatabaseHandle, migrateToLatest, openDatabase } from './db/index.ts';
import { createDnsLookup } from './dns/index.ts';
import { DomainsService, startDomainVerifier } from './domains/index.ts';
import { findEndpointSummary } from './endpoints/index.ts';
import { buildHttpServer } from './http/index.ts';

export const VERSION: string = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')).version;

export interface App {
  config: Readonly<Config>;
  logger: Logger;
  database: DatabaseHandle;
  accounts: AccountsService;
  domains: DomainsService;
  http: FastifyInstance;
  /** Starts listening and the background jobs. Returns the bound HTTP address. */
  start(): Promise<{ httpUrl: string }>;
  close(): Promise<void>;
}

export interface AppOptions {
  clock?: Clock;
  logger?: Logger;
}

/** The one place that builds every capability and hands each its dependencies. */
export async function createApp(config: Readonly<Config>, options: AppOptions = {}): Promise<App> {
  const logger = options.logger ?? createLogger(config.logLevel);
  const clock = options.clock ?? systemClock;
  const database = await openDatabase(config.database);
  await migrateToLatest(database);
  const { db } = database;

  const dns = createDnsLookup(config.dnsServers);
  const accounts = new AccountsService(db, clock);
  const domains = new DomainsService({
    db,
    dns,
    clock,
    settings: { mxHost: config.mxHost, giveUpAfterMs: config.domainVerification.giveUpAfterMs },
    endpoints: { find: (accountId, id) => findEndpointSummary(db, accountId, id) },
  });
  const http = await buildHttpServer({ accounts, domains, ping: database.ping }, logger, VERSION);

  let verifier: ReturnType<typeof startDomainVerifier> | undefined;
  return {
    config,
    logger,
    database,
    accounts,
    domains,
    http,
    async start() {
      const httpUrl = await http.listen({ port: config.http.port, host: config.http.host });
      verifier = startDomainVerifier(domains, config.domainVerification.intervalMs, logger);
      return { httpUrl };
    },
    async close() {
      await verifier?.stop();
      await http.close();
      await database.close();
    },
  };
}
