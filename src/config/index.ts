import { hostname } from 'node:os';
import { resolve } from 'node:path';
import { Value } from 'typebox/value';
import { urlHost } from '../core/index.ts';
import { type Env, EnvSchema } from './schema.ts';

export type DatabaseConfig =
  | { kind: 'sqlite'; file: string; synchronous: Env['SQLITE_SYNCHRONOUS'] }
  | { kind: 'postgres'; url: string; schema?: string; poolSize: number };

export type BlobConfig =
  | { kind: 'fs'; dir: string }
  | { kind: 's3'; bucket: string; prefix: string; endpoint?: string; region: string };

/** Where spamd listens, and how long a scan may take before the verdict is TEMPERROR. */
export interface SpamdConfig {
  host: string;
  port: number;
  timeoutMs: number;
}

export interface Config {
  http: { port: number; host: string; requestTimeoutMs: number; keepAliveTimeoutMs: number; maxConnections: number };
  smtp: {
    port: number;
    host: string;
    maxMessageBytes: number;
    maxConnections: number;
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
  webhookAllowPrivate: boolean;
  subaddressing: boolean;
  domainVerification: { intervalMs: number; giveUpAfterMs: number };
  delivery: {
    /** Attempts one process runs at once. */
    concurrency: number;
    /** Multiplies the retry schedule; below 1 only to make tests and benches run in seconds. */
    retryScale: number;
    /** How long a claimed job stays owned without a heartbeat before another worker takes it. */
    leaseMs: number;
    /** Longest sleep between looks at the outbox when no wake-up arrives. */
    pollMs: number;
    /** The port of direct MX delivery for forwards (25 except in tests). */
    mxPort: number;
  };
  logLevel: string;
}

export class ConfigError extends Error {}

/** Reads, validates and freezes the configuration. Throws ConfigError naming the first bad variable. */
export function loadConfig(env: Record<string, string | undefined> = process.env): Readonly<Config> {
  const picked: Record<string, string> = {};
  for (const name of Object.keys(EnvSchema.properties)) {
    const value = env[name];
    if (value !== undefined && value !== '') picked[name] = value;
  }
  const converted = Value.Convert(EnvSchema, Value.Default(EnvSchema, picked));
  const [firstError] = Value.Errors(EnvSchema, converted);
  if (firstError) {
    const name = firstError.instancePath.replace(/^\//, '');
    throw new ConfigError(`Invalid configuration: ${name}=${JSON.stringify(picked[name] ?? '')} ${firstError.message}`);
  }
  const e = converted as Env;
  if (Boolean(e.TLS_CERT_PATH) !== Boolean(e.TLS_KEY_PATH)) {
    throw new ConfigError('Invalid configuration: TLS_CERT_PATH and TLS_KEY_PATH must be set together');
  }
  const dataDir = resolve(e.DATA_DIR);
  return Object.freeze({
    http: {
      port: e.PORT,
      host: e.HOST,
      requestTimeoutMs: e.HTTP_REQUEST_TIMEOUT_SECONDS * 1000,
      keepAliveTimeoutMs: e.HTTP_KEEP_ALIVE_TIMEOUT_SECONDS * 1000,
      maxConnections: e.HTTP_MAX_CONNECTIONS,
    },
    smtp: {
      port: e.SMTP_PORT,
      host: e.SMTP_HOST,
      maxMessageBytes: e.SMTP_MAX_MESSAGE_BYTES,
      maxConnections: e.SMTP_MAX_CONNECTIONS,
      idleTimeoutMs: e.SMTP_IDLE_TIMEOUT_SECONDS * 1000,
      connectionTimeoutMs: e.SMTP_CONNECTION_TIMEOUT_SECONDS * 1000,
      ingestWorkers: e.INGEST_WORKERS,
      tlsCertPath: e.TLS_CERT_PATH,
      tlsKeyPath: e.TLS_KEY_PATH,
      relayUrl: e.SMTP_RELAY_URL,
    },
    dataDir,
    database: e.DATABASE_URL
      ? { kind: 'postgres', url: e.DATABASE_URL, schema: e.DATABASE_SCHEMA, poolSize: e.DATABASE_POOL_SIZE }
      : { kind: 'sqlite', file: resolve(dataDir, 'mailroom.sqlite'), synchronous: e.SQLITE_SYNCHRONOUS },
    blobs: parseBlobStore(e, dataDir),
    publicUrl: (e.PUBLIC_URL ?? `http://localhost:${e.PORT}`).replace(/\/+$/, ''),
    mxHost: (e.MX_HOST ?? hostname()).toLowerCase().replace(/\.$/, ''),
    dnsServers: e.DNS_SERVERS
      ? e.DNS_SERVERS.split(',')
          .map((server) => server.trim())
          .filter(Boolean)
      : [],
    spamd: parseSpamd(e),
    bootstrapApiKey: e.MAILROOM_API_KEY,
    webhookAllowPrivate: e.WEBHOOK_ALLOW_PRIVATE,
    subaddressing: e.SUBADDRESSING,
    domainVerification: {
      intervalMs: e.DOMAIN_VERIFY_INTERVAL_SECONDS * 1000,
      giveUpAfterMs: e.DOMAIN_VERIFY_GIVE_UP_HOURS * 3600 * 1000,
    },
    delivery: {
      concurrency: e.DELIVERY_CONCURRENCY,
      retryScale: e.DELIVERY_RETRY_SCALE,
      leaseMs: e.DELIVERY_LEASE_SECONDS * 1000,
      pollMs: e.DELIVERY_POLL_SECONDS * 1000,
      mxPort: e.FORWARD_MX_PORT,
    },
    logLevel: e.LOG_LEVEL,
  } satisfies Config);
}

const SPAMD_PORT = 783;

function parseSpamd(e: Env): SpamdConfig | undefined {
  if (!e.SPAMD_URL) return undefined;
  const url = new URL(e.SPAMD_URL);
  return {
    host: urlHost(url),
    port: url.port ? Number(url.port) : SPAMD_PORT,
    timeoutMs: e.SPAMD_TIMEOUT_SECONDS * 1000,
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
  };
}
