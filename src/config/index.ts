import { Resolver } from 'node:dns/promises';
import { hostname } from 'node:os';
import { resolve } from 'node:path';
import { Value } from 'typebox/value';
import { ConfigError, urlHost } from '../core/index.ts';
import { type Env, EnvSchema } from './schema.ts';

export type DatabaseConfig =
  | { kind: 'sqlite'; file: string; synchronous: Env['SQLITE_SYNCHRONOUS'] }
  | { kind: 'postgres'; url: string; schema?: string; poolSize: number; connectTimeoutMs: number };

export type BlobConfig =
  | { kind: 'fs'; dir: string }
  | { kind: 's3'; bucket: string; prefix: string; endpoint?: string; region: string; timeoutMs: number };

/** Where spamd listens, and how long a scan may take before the verdict is TEMPERROR. */
export interface SpamdConfig {
  host: string;
  port: number;
  timeoutMs: number;
}

export interface Config {
  http: {
    port: number;
    host: string;
    requestTimeoutMs: number;
    keepAliveTimeoutMs: number;
    maxConnections: number;
    /** Whether `/` serves the web console. */
    console: boolean;
  };
  smtp: {
    port: number;
    host: string;
    maxMessageBytes: number;
    /** Bytes of messages in progress held at once, over all connections. */
    maxBufferedBytes: number;
    maxConnections: number;
    maxConnectionsPerIp: number;
    /** DATA slower than this over a window is cut; 0 means no minimum. */
    minDataRateBytesPerSecond: number;
    dataRateWindowMs: number;
    idleTimeoutMs: number;
    connectionTimeoutMs: number;
    /** Parse/verdict worker threads; undefined lets ingest choose. */
    ingestWorkers?: number;
    tlsCertPath?: string;
    tlsKeyPath?: string;
    relayUrl?: string;
  };
  dataDir: string;
  database: DatabaseConfig;
  blobs: BlobConfig;
  publicUrl: string;
  mxHost: string;
  /** Empty means the system resolvers. */
  dnsServers: string[];
  /** Unset: no spam scanning. */
  spamd?: SpamdConfig;
  bootstrapApiKey?: string;
  /** Webhooks and direct-MX forwards may reach internal addresses. */
  allowPrivateDestinations: boolean;
  subaddressing: boolean;
  domainVerification: { intervalMs: number; giveUpAfterMs: number };
  /** How often each process deletes the mail past its retention period. */
  retention: { sweepIntervalMs: number };
  /** How often each process checks health alerts, and how often a verified domain's records are re-checked. */
  alerts: { checkIntervalMs: number; dnsCheckIntervalMs: number };
  delivery: {
    /** Attempts one process runs at once. */
    concurrency: number;
    /** Of those, how many one endpoint (or legacy webhook) may hold, so that a slow one cannot stall the others. */
    concurrencyPerTarget: number;
    /** Multiplies the retry schedule; below 1 only to make tests and benches run in seconds. */
    retryScale: number;
    /** How long a claimed job stays owned without a heartbeat before another worker takes it. */
    leaseMs: number;
    /** Longest sleep between looks at the outbox when no wake-up arrives. */
    pollMs: number;
    /** How long new deliveries may wait while SMTP senders queue up for their 250; 0 delivers alongside. */
    yieldMs: number;
    /** The port of direct MX delivery for forwards (25 except in tests). */
    mxPort: number;
  };
  /** `/metrics`: on the HTTP port unless `port` is set, behind an API key unless `auth` is none. */
  metrics: { enabled: boolean; port?: number; host: string; auth: 'api_key' | 'none' };
  /** 0 turns a limit off. Each is counted in this process's memory. */
  rateLimits: { apiRequestsPerMinute: number; smtpMessagesPerMinute: number; accountMailPerHour: number };
  /** How long a stop may take before the process exits anyway. */
  shutdownTimeoutMs: number;
  logLevel: string;
}

/** What a variable's schema accepts, in words: "one of a, b", "a whole number from 0 to 65535", a description. */
function accepted(schema: Record<string, unknown>): string {
  if (Array.isArray(schema.anyOf)) return `one of ${enumValues(schema)!.join(', ')}`;
  if (schema.type === 'boolean') return 'true or false';
  if (schema.type === 'integer' || schema.type === 'number') {
    const kind = schema.type === 'integer' ? 'a whole number' : 'a number';
    const { minimum, maximum, exclusiveMinimum } = schema as Record<string, number | undefined>;
    if (minimum !== undefined && maximum !== undefined) return `${kind} from ${minimum} to ${maximum}`;
    const bounds = [
      exclusiveMinimum !== undefined && `greater than ${exclusiveMinimum}`,
      minimum !== undefined && `at least ${minimum}`,
      maximum !== undefined && `at most ${maximum}`,
    ].filter(Boolean);
    return bounds.length > 0 ? `${kind} that is ${bounds.join(' and ')}` : kind;
  }
  if (typeof schema.description === 'string') return schema.description;
  return `a text of at least ${schema.minLength} characters`;
}

/** The literals of an enum-like variable (a union of string constants), or undefined for any other schema. */
function enumValues(schema: Record<string, unknown>): string[] | undefined {
  if (!Array.isArray(schema.anyOf)) return undefined;
  return schema.anyOf.map((member: { const: string }) => member.const);
}

const PROPERTIES = EnvSchema.properties as unknown as Record<string, Record<string, unknown>>;

const URL_VARIABLES = ['DATABASE_URL', 'S3_ENDPOINT', 'PUBLIC_URL', 'SMTP_RELAY_URL', 'SPAMD_URL', 'BLOB_STORE'];

/** A decimal number, as an operator writes one (`30`, `0.5`, `5e7`). */
const DECIMAL = /^[+-]?(\d+\.?\d*|\.\d+)(e[+-]?\d+)?$/i;

/** Variables whose value is a credential, never repeated in an error. */
const SECRET_VARIABLES = new Set(['MAILROOM_API_KEY']);
/** The password of a URL's user info, up to the last `@` (an unencoded `/`, `#` or `@` in it breaks the parse). */
const URL_PASSWORD = /^([a-z][a-z0-9+.-]*:\/\/[^:/?#@]*:).*@/is;

/** An error naming the variable and what it accepts; start-up errors end in logs, so credentials are not shown. */
function invalid(name: string, value: string): ConfigError {
  const shown = SECRET_VARIABLES.has(name)
    ? ' (not shown)'
    : `=${JSON.stringify(value.replace(URL_PASSWORD, '$1***@'))}`;
  return new ConfigError(`Invalid configuration: ${name}${shown} is not ${accepted(PROPERTIES[name]!)}`);
}

/**
 * A numeric variable's value, read as a decimal number. Left to TypeBox's conversion, `true` would be 1, `0x10` 16
 * and `1.9` a whole number's 1; a whole number past 2^53 would not be the one written.
 */
function numeric(name: string, type: 'integer' | 'number', value: string): number {
  const number = DECIMAL.test(value.trim()) ? Number(value) : Number.NaN;
  if (type === 'integer' ? !Number.isSafeInteger(number) : !Number.isFinite(number)) throw invalid(name, value);
  return number;
}

/**
 * A duration in whole milliseconds, at least one: Fastify refuses a fraction (`2.01` seconds is 2009.9999... ms), and
 * Node reads a timeout of 0 as none.
 */
function milliseconds(seconds: number): number {
  return Math.max(1, Math.round(seconds * 1000));
}

/** Reads, validates and freezes the configuration. Throws ConfigError naming the first bad variable. */
export function loadConfig(env: Record<string, string | undefined> = process.env): Readonly<Config> {
  const picked: Record<string, string> = {};
  const values: Record<string, string | number> = {};
  for (const [name, schema] of Object.entries(PROPERTIES)) {
    const value = env[name];
    if (value === undefined || value === '') continue;
    // Enum values are matched without regard to case: LOG_LEVEL=INFO means info.
    picked[name] = enumValues(schema)?.find((literal) => literal.toLowerCase() === value.toLowerCase()) ?? value;
    values[name] =
      schema.type === 'integer' || schema.type === 'number' ? numeric(name, schema.type, value) : picked[name];
  }
  const converted = Value.Convert(EnvSchema, Value.Default(EnvSchema, values));
  const [firstError] = Value.Errors(EnvSchema, converted);
  if (firstError) {
    const name = firstError.instancePath.replace(/^\//, '');
    throw invalid(name, picked[name] ?? '');
  }
  // Their patterns check the scheme; the URL parser may still refuse the rest (a port past 65535, a bad host).
  for (const name of URL_VARIABLES) {
    const value = picked[name];
    if (value !== undefined && value !== 'fs' && !URL.canParse(value)) throw invalid(name, value);
  }
  const e = converted as Env;
  if (Boolean(e.TLS_CERT_PATH) !== Boolean(e.TLS_KEY_PATH)) {
    throw new ConfigError('Invalid configuration: TLS_CERT_PATH and TLS_KEY_PATH must be set together');
  }
  if (e.SMTP_MAX_BUFFERED_BYTES < e.SMTP_MAX_MESSAGE_BYTES) {
    // A message of the largest size would be answered "try again later" for ever.
    throw new ConfigError(
      `Invalid configuration: SMTP_MAX_BUFFERED_BYTES=${e.SMTP_MAX_BUFFERED_BYTES} is less than SMTP_MAX_MESSAGE_BYTES=${e.SMTP_MAX_MESSAGE_BYTES}`,
    );
  }
  if (!e.METRICS && e.METRICS_PORT !== undefined) {
    // The listener the operator asked for would silently not open.
    throw new ConfigError(
      `Invalid configuration: METRICS_PORT=${e.METRICS_PORT} is set but METRICS=false turns metrics off: unset one`,
    );
  }
  const dataDir = resolve(e.DATA_DIR);
  return Object.freeze({
    http: {
      port: e.PORT,
      host: e.HOST,
      requestTimeoutMs: milliseconds(e.HTTP_REQUEST_TIMEOUT_SECONDS),
      keepAliveTimeoutMs: milliseconds(e.HTTP_KEEP_ALIVE_TIMEOUT_SECONDS),
      maxConnections: e.HTTP_MAX_CONNECTIONS,
      console: e.CONSOLE,
    },
    smtp: {
      port: e.SMTP_PORT,
      host: e.SMTP_HOST,
      maxMessageBytes: e.SMTP_MAX_MESSAGE_BYTES,
      maxBufferedBytes: e.SMTP_MAX_BUFFERED_BYTES,
      maxConnections: e.SMTP_MAX_CONNECTIONS,
      maxConnectionsPerIp: e.SMTP_MAX_CONNECTIONS_PER_IP,
      minDataRateBytesPerSecond: e.SMTP_MIN_DATA_RATE_BYTES_PER_SECOND,
      dataRateWindowMs: milliseconds(e.SMTP_DATA_RATE_WINDOW_SECONDS),
      idleTimeoutMs: milliseconds(e.SMTP_IDLE_TIMEOUT_SECONDS),
      connectionTimeoutMs: milliseconds(e.SMTP_CONNECTION_TIMEOUT_SECONDS),
      ingestWorkers: e.INGEST_WORKERS,
      tlsCertPath: e.TLS_CERT_PATH,
      tlsKeyPath: e.TLS_KEY_PATH,
      relayUrl: e.SMTP_RELAY_URL,
    },
    dataDir,
    database: e.DATABASE_URL
      ? {
          kind: 'postgres',
          url: e.DATABASE_URL,
          schema: e.DATABASE_SCHEMA,
          poolSize: e.DATABASE_POOL_SIZE,
          connectTimeoutMs: milliseconds(e.DATABASE_CONNECT_TIMEOUT_SECONDS),
        }
      : { kind: 'sqlite', file: resolve(dataDir, 'mailroom.sqlite'), synchronous: e.SQLITE_SYNCHRONOUS },
    blobs: parseBlobStore(e, dataDir),
    publicUrl: (e.PUBLIC_URL ?? `http://localhost:${e.PORT}`).replace(/\/+$/, ''),
    mxHost: (e.MX_HOST ?? hostname()).toLowerCase().replace(/\.$/, ''),
    dnsServers: parseDnsServers(e.DNS_SERVERS),
    spamd: parseSpamd(e),
    bootstrapApiKey: e.MAILROOM_API_KEY,
    allowPrivateDestinations: e.ALLOW_PRIVATE_DESTINATIONS || e.WEBHOOK_ALLOW_PRIVATE,
    subaddressing: e.SUBADDRESSING,
    domainVerification: {
      intervalMs: milliseconds(e.DOMAIN_VERIFY_INTERVAL_SECONDS),
      giveUpAfterMs: milliseconds(e.DOMAIN_VERIFY_GIVE_UP_HOURS * 3600),
    },
    retention: { sweepIntervalMs: milliseconds(e.RETENTION_SWEEP_SECONDS) },
    alerts: {
      checkIntervalMs: milliseconds(e.ALERT_CHECK_SECONDS),
      dnsCheckIntervalMs: milliseconds(e.ALERT_DNS_CHECK_MINUTES * 60),
    },
    delivery: {
      concurrency: e.DELIVERY_CONCURRENCY,
      concurrencyPerTarget: Math.min(
        e.DELIVERY_CONCURRENCY,
        e.DELIVERY_CONCURRENCY_PER_ENDPOINT ?? Math.ceil(e.DELIVERY_CONCURRENCY / 2),
      ),
      retryScale: e.DELIVERY_RETRY_SCALE,
      leaseMs: milliseconds(e.DELIVERY_LEASE_SECONDS),
      pollMs: milliseconds(e.DELIVERY_POLL_SECONDS),
      yieldMs: Math.round(e.DELIVERY_YIELD_SECONDS * 1000),
      mxPort: e.FORWARD_MX_PORT,
    },
    metrics: {
      enabled: e.METRICS,
      port: e.METRICS_PORT,
      host: e.METRICS_HOST,
      auth: e.METRICS_AUTH ?? (e.METRICS_PORT === undefined ? 'api_key' : 'none'),
    },
    rateLimits: {
      apiRequestsPerMinute: e.API_RATE_LIMIT_PER_MINUTE,
      smtpMessagesPerMinute: e.SMTP_RATE_LIMIT_PER_MINUTE,
      accountMailPerHour: e.ACCOUNT_MAIL_LIMIT_PER_HOUR,
    },
    shutdownTimeoutMs: milliseconds(e.SHUTDOWN_TIMEOUT_SECONDS),
    logLevel: e.LOG_LEVEL,
  } satisfies Config);
}

/**
 * The configuration of `mailroom dev`: the environment's, but on SQLite in ./.mailroom-dev unless DATA_DIR says
 * otherwise, on loopback unless HOST and SMTP_HOST say otherwise, with every DNS question sent to the sandbox's own
 * server and private destinations allowed. DATABASE_URL is refused, so a sandbox never runs against a real database.
 */
export function loadSandboxConfig(
  sandbox: { dnsServer: string; mxHost: string },
  env: Record<string, string | undefined> = process.env,
): Readonly<Config> {
  if (env.DATABASE_URL) {
    throw new ConfigError(
      'mailroom dev runs on SQLite in its own folder and refuses DATABASE_URL: unset it for the sandbox, ' +
        'or run mailroom serve to use PostgreSQL',
    );
  }
  return loadConfig({
    ...env,
    HOST: env.HOST || '127.0.0.1',
    SMTP_HOST: env.SMTP_HOST || '127.0.0.1',
    DATA_DIR: env.DATA_DIR || './.mailroom-dev',
    MX_HOST: env.MX_HOST || sandbox.mxHost,
    DNS_SERVERS: sandbox.dnsServer,
    ALLOW_PRIVATE_DESTINATIONS: 'true',
  });
}

/**
 * `host` or `host:port` entries, comma separated, checked by the resolver that will use them. Set but naming no server
 * (`,` or blanks) is refused: it would silently mean the system resolvers.
 */
function parseDnsServers(value: string | undefined): string[] {
  if (!value) return [];
  const servers = value
    .split(',')
    .map((server) => server.trim())
    .filter(Boolean);
  if (servers.length > 0 && resolverAccepts(servers)) return servers;
  throw new ConfigError(
    `Invalid configuration: DNS_SERVERS=${JSON.stringify(value)} is not a comma-separated list of IP addresses, ` +
      'each optionally with :port (e.g. 1.1.1.1,[2606:4700::1111]:53)',
  );
}

function resolverAccepts(servers: string[]): boolean {
  try {
    new Resolver().setServers(servers);
    return true;
  } catch {
    return false;
  }
}

const SPAMD_PORT = 783;

function parseSpamd(e: Env): SpamdConfig | undefined {
  if (!e.SPAMD_URL) return undefined;
  const url = new URL(e.SPAMD_URL);
  return {
    host: urlHost(url),
    port: url.port ? Number(url.port) : SPAMD_PORT,
    timeoutMs: milliseconds(e.SPAMD_TIMEOUT_SECONDS),
  };
}

function parseBlobStore(e: Env, dataDir: string): BlobConfig {
  if (e.BLOB_STORE === 'fs') return { kind: 'fs', dir: resolve(dataDir, 'blobs') };
  const url = new URL(e.BLOB_STORE);
  return {
    kind: 's3',
    bucket: url.host,
    prefix: url.pathname.replace(/^\/+|\/+$/g, ''),
    endpoint: e.S3_ENDPOINT,
    region: e.S3_REGION,
    timeoutMs: milliseconds(e.S3_TIMEOUT_SECONDS),
  };
}
