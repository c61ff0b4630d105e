import { setFlagsFromString } from 'node:v8';
import { bootstrapAccess, revokedConfiguredKeyWarning } from './accounts/index.ts';
import type { App, ListenError } from './app.ts';
import { type Config, loadConfig, loadSandboxConfig } from './config/index.ts';
import { AppError, ConfigError } from './core/index.ts';
import { SANDBOX_DOMAIN, SANDBOX_MX_HOST, type SandboxDns, setUpSandbox, startSandboxDns } from './sandbox/index.ts';

/** How often a running server looks for a migration a newer Mailroom applied (see watchForNewerSchema). */
const NEWER_SCHEMA_CHECK_MS = 10_000;

/** How far V8 lets the old generation grow past what the last full GC kept, in percent (see startApp). */
const OLD_GENERATION_GROWTH_PERCENT = 25;

/** Ends start-up with one line saying what to do; no stack trace, exit code 1. */
function fail(message: string): never {
  process.stderr.write(`${message}\n`);
  process.exit(1);
}

function configOrFail(load: () => Readonly<Config>): Readonly<Config> {
  try {
    return load();
  } catch (error) {
    if (error instanceof ConfigError) fail(error.message);
    throw error;
  }
}

/** `host:port` of a listener, with IPv6 hosts in brackets. */
function hostPort(host: string, port: number): string {
  return host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`;
}

/** Where to reach a listener from this machine: a wildcard bind is reached on loopback. */
function reachableHost(host: string): string {
  if (host === '0.0.0.0' || host === '::') return '127.0.0.1';
  return host.includes(':') ? `[${host}]` : host;
}

/** The database, and on PostgreSQL the schema the tables are in (DATABASE_SCHEMA's, or the one search_path found). */
function describeDatabase(database: Config['database'], schema: string | undefined): string {
  if (database.kind === 'sqlite') return `SQLite ${database.file}`;
  const url = new URL(database.url);
  const where = `${url.username ? `${url.username}@` : ''}${url.host}${url.pathname}`;
  return `PostgreSQL ${where}${schema ? ` schema ${schema}` : ''}`;
}

function describeBlobs(blobs: Config['blobs']): string {
  if (blobs.kind === 'fs') return `filesystem ${blobs.dir}`;
  const place = `s3://${blobs.bucket}${blobs.prefix ? `/${blobs.prefix}` : ''}`;
  return `S3 ${place}${blobs.endpoint ? ` at ${blobs.endpoint}` : ''}`;
}

/** The listeners' real ports, and the HTTP API's URL as reached from this machine. */
interface Bound {
  httpPort: number;
  smtpPort: number;
  httpUrl: string;
  /** The metrics listener's, when METRICS_PORT gives it one. */
  metricsPort?: number;
}

/** What this process runs on and where it listens: logged as one structured line, returned as a few for stdout. */
function banner(app: App, version: string, bound: Bound): string[] {
  const { config } = app;
  const started = {
    version,
    database: describeDatabase(config.database, app.database.postgres?.schema),
    blobStore: describeBlobs(config.blobs),
    dataDir: config.dataDir,
    http: hostPort(config.http.host, bound.httpPort),
    smtp: hostPort(config.smtp.host, bound.smtpPort),
    mxHost: config.mxHost,
    dnsServers: config.dnsServers,
    ...(bound.metricsPort === undefined ? {} : { metrics: hostPort(config.metrics.host, bound.metricsPort) }),
  };
  app.logger.info(started, 'mailroom started');
  const lines = [
    `Mailroom ${version}`,
    `  Database  ${started.database}`,
    `  Blobs     ${started.blobStore}`,
    `  Data      ${started.dataDir}`,
    `  HTTP      ${started.http} (${config.http.console ? `console at ${bound.httpUrl}/, ` : ''}API at ${bound.httpUrl}, docs at ${bound.httpUrl}/docs)`,
    `  SMTP      ${started.smtp}`,
    `  MX host   ${started.mxHost}`,
    `  DNS       ${started.dnsServers.length > 0 ? started.dnsServers.join(', ') : 'system resolvers'}`,
  ];
  if (started.metrics) {
    // A listener of its own, often on port 0 in tests or a port the operator must open to the scraper: say which.
    const url = `http://${reachableHost(config.metrics.host)}:${bound.metricsPort}/metrics`;
    const auth = config.metrics.auth === 'none' ? 'no key' : 'an API key';
    lines.push(`  Metrics   ${started.metrics} (${url}, ${auth})`);
  }
  if (!config.mxHost.includes('.')) {
    const warning = `MX_HOST "${config.mxHost}" is a short host name: set MX_HOST to this server's public DNS name`;
    app.logger.warn({ mxHost: config.mxHost }, warning);
    lines.push(`Warning: ${warning} (a domain's MX and SPF records follow it at the domain's next check)`);
  }
  return lines;
}

/**
 * What the machine or a service refused (a file or directory, a certificate, the database or the blob store), said in
 * one line: a system error code (ENOENT, ECONNREFUSED...), OpenSSL's, a PostgreSQL SQLSTATE, or S3's. Anything else
 * is a fault of Mailroom's and keeps its stack. The server and the CLI both say it this way.
 */
export function refusal(error: unknown): string | undefined {
  const { code, message, name } = (error ?? {}) as NodeJS.ErrnoException;
  // The AWS SDK's: an S3 answer (NoSuchBucket, InvalidAccessKeyId, AccessDenied...) carries $metadata.
  if (name === 'CredentialsProviderError' || (typeof error === 'object' && error !== null && '$metadata' in error)) {
    return `the S3 blob store (BLOB_STORE, S3_ENDPOINT, AWS credentials) refused: ${message}`;
  }
  if (typeof code !== 'string' || !/^(E[A-Z]+|ERR_OSSL_\w+|[0-9A-Z]{5})$/.test(code)) return undefined;
  if (code.startsWith('ERR_OSSL_')) return `the TLS certificate or key is not usable: ${message}`;
  return message;
}

function refusedAtStart(error: unknown): string | undefined {
  const refused = refusal(error);
  return refused && `Cannot start: ${refused}`;
}

function listenFailure(error: ListenError, config: Readonly<Config>): string {
  const variable = { http: 'PORT', smtp: 'SMTP_PORT', metrics: 'METRICS_PORT' }[error.server];
  const code = (error.cause as NodeJS.ErrnoException).code;
  if (code === 'EADDRINUSE') {
    return `${variable} ${error.port} is in use: stop what listens there, or set ${variable} to a free port`;
  }
  if (code === 'EACCES') return `${variable} ${error.port} needs privileges this process does not have`;
  if (code === 'EADDRNOTAVAIL' || code === 'ENOTFOUND' || code === 'EAI_AGAIN') {
    // The address to listen on is none of this machine's: the host setting is what to change, not the port.
    const [hostVariable, host] = {
      http: ['HOST', config.http.host],
      smtp: ['SMTP_HOST', config.smtp.host],
      metrics: ['METRICS_HOST', config.metrics.host],
    }[error.server];
    return `${hostVariable} ${host} is not an address of this machine (${code}): set ${hostVariable} to one, or 0.0.0.0`;
  }
  return `${variable} ${error.port}: ${(error.cause as Error).message}`;
}

/**
 * Builds and starts the app, closing it cleanly on SIGTERM/SIGINT. Once both servers listen, `ready` runs and its
 * lines are printed after the banner, in one write, so a reader of stdout sees start-up end at once.
 */
async function startApp(config: Readonly<Config>, ready: (app: App, bound: Bound) => Promise<string[]>): Promise<void> {
  // V8 pretenures objects from allocation sites whose objects often survive a young-generation GC. MailParser's
  // per-message objects do, briefly; pretenured into the old generation, they then keep the young objects they point
  // to alive through every young GC until the next full one. V8 flags are process-wide, so this covers the ingest
  // worker threads too; it is set before they start.
  setFlagsFromString('--no-allocation-site-pretenuring');
  // After a full GC V8 lets the old generation grow to a multiple of what survived (up to four) before the next one,
  // and that garbage is resident memory meanwhile. A quarter more trades some GC time for memory (performance.md).
  setFlagsFromString(`--heap-growing-percent=${OLD_GENERATION_GROWTH_PERCENT}`);
  // The process settings' --max-semi-space-size has sized the event loop's young generation. V8 applies the flag to
  // every isolate it creates, over a worker's own resourceLimits, so it is cleared before the worker threads start.
  setFlagsFromString('--max-semi-space-size=0');
  // Loaded once the configuration holds, so that a start refused for a setting says so without loading the server.
  const { createApp, ListenError, VERSION } = await import('./app.ts');
  const { watchForNewerSchema } = await import('./db/index.ts');
  let app: App;
  try {
    app = await createApp(config);
  } catch (error) {
    // What only the database can tell is wrong with the configuration (its schema).
    if (error instanceof ConfigError) fail(error.message);
    const refused = refusedAtStart(error);
    if (refused) fail(refused);
    throw error;
  }
  // Handlers go in before listening, so a signal that arrives right after start-up still closes cleanly.
  let closing = false;
  let newerSchemaWatch: { stop(): Promise<void> } | undefined;
  const shutdown = (signal: string, exitCode = 0) => {
    if (closing) return;
    closing = true;
    app.logger.info({ signal }, 'shutting down');
    setTimeout(() => {
      app.logger.error(
        { timeoutMs: config.shutdownTimeoutMs },
        'shutdown took too long: exiting (SHUTDOWN_TIMEOUT_SECONDS)',
      );
      process.exit(1);
    }, config.shutdownTimeoutMs).unref();
    // Beside app.close, not before it: SMTP's 421 to open sessions does not wait for the check's query.
    Promise.all([newerSchemaWatch?.stop(), app.close()]).then(
      () => {
        app.logger.info({ signal }, 'mailroom stopped');
        process.exit(exitCode);
      },
      (error) => {
        app.logger.error({ err: error }, 'shutdown failed');
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', () => shutdown('SIGTERM'));
  process.on('SIGINT', () => shutdown('SIGINT'));

  let started: Awaited<ReturnType<App['start']>>;
  try {
    started = await app.start();
  } catch (error) {
    if (error instanceof ListenError) fail(listenFailure(error, config));
    const refused = refusedAtStart(error);
    if (refused) fail(refused);
    throw error;
  }
  // Stopped as its next start would be refused: in one line on stderr, with exit code 1.
  newerSchemaWatch = await watchForNewerSchema(app.database, NEWER_SCHEMA_CHECK_MS, app.logger, (refusal) => {
    process.stderr.write(`${refusal}\n`);
    shutdown('newer schema', 1);
  });
  const httpPort = Number(new URL(started.httpUrl).port);
  const bound = {
    httpPort,
    smtpPort: started.smtpPort,
    httpUrl: `http://${reachableHost(config.http.host)}:${httpPort}`,
    ...(started.metricsUrl ? { metricsPort: Number(new URL(started.metricsUrl).port) } : {}),
  };
  let lines: string[];
  try {
    lines = [...banner(app, VERSION, bound), ...(await ready(app, bound))];
  } catch (error) {
    // Left listening, the server would look started without ever saying how to use it.
    await app.close();
    // What set-up refused (a MAILROOM_API_KEY of another account) is said in one line; anything else keeps its stack.
    if (error instanceof AppError) fail(error.message);
    throw error;
  }
  process.stdout.write(`${lines.join('\n')}\n`);
}

/** Logs that MAILROOM_API_KEY is revoked, and returns the warning's line for stdout. */
function revokedKeyWarning(app: App, revokedAt: string): string {
  const warning = revokedConfiguredKeyWarning(revokedAt);
  app.logger.warn({ revokedAt }, warning);
  return `Warning: ${warning}`;
}

/** `npm start`: read config, start, and on an empty installation print its first API key. */
export async function serve(): Promise<void> {
  const config = configOrFail(() => loadConfig());
  await startApp(config, async (app) => {
    // Only now that both servers listen: a key shown before a failed start would be one nobody can use.
    const { issued, configuredKeyRevokedAt } = await bootstrapAccess(app.accounts, config.bootstrapApiKey);
    if (configuredKeyRevokedAt) return [revokedKeyWarning(app, configuredKeyRevokedAt)];
    if (!issued) return [];
    return [
      '',
      `Created account "${issued.accountName}". Its API key (shown once, store it now):`,
      '',
      `    ${issued.key}`,
      '',
      'Make more keys with: npx mailroom keys create [--account NAME]',
    ];
  });
}

/**
 * `mailroom dev`: a sandbox on SQLite whose domain verifies against a DNS server of its own on loopback, with an
 * address ready to receive; prints a key and how to send and read a mail.
 */
export async function serveSandbox(): Promise<void> {
  const dns = await startSandboxDns(SANDBOX_DOMAIN);
  const config = configOrFail(() => loadSandboxConfig({ dnsServer: dns.address, mxHost: SANDBOX_MX_HOST }));
  try {
    await startSandbox(config, dns);
  } catch (error) {
    await dns.close();
    throw error;
  }
}

async function startSandbox(config: Readonly<Config>, dns: SandboxDns): Promise<void> {
  await startApp(config, async (app, bound) => {
    const sandbox = await setUpSandbox(app, dns, config.bootstrapApiKey);
    const smtp = `${reachableHost(config.smtp.host)}:${bound.smtpPort}`;
    const keyNote =
      config.bootstrapApiKey && !sandbox.configuredKeyRevokedAt
        ? 'MAILROOM_API_KEY'
        : 'new on each run; earlier ones keep working';
    return [
      ...(sandbox.configuredKeyRevokedAt ? [revokedKeyWarning(app, sandbox.configuredKeyRevokedAt)] : []),
      '',
      `Sandbox ready: ${SANDBOX_DOMAIN} is verified by a DNS server at ${dns.address} that answers only for it.`,
      `  API key   ${sandbox.key} (${keyNote})`,
      `  HTTP      ${bound.httpUrl}`,
      `  SMTP      ${smtp}`,
      `  Address   ${sandbox.address}${sandbox.catchAll ? ` (any other address @${SANDBOX_DOMAIN} is kept too, by the catch-all)` : ''}`,
      'Send a mail:',
      `  swaks --server ${smtp} --from you@example.com --to ${sandbox.address}`,
      'Read it:',
      `  curl -H "Authorization: Bearer ${sandbox.key}" ${bound.httpUrl}/api/v2/mail`,
    ];
  });
}
