import { type Static, Type } from 'typebox';
import { MAX_SCHEMA_NAME_BYTES } from '../core/index.ts';

const Port = (fallback: number) => Type.Integer({ minimum: 0, maximum: 65535, default: fallback });
const Flag = (fallback: boolean) => Type.Boolean({ default: fallback });
/** The longest delay a Node timer can hold (2^31 - 1 ms, about 24.8 days); a longer one fires at once. */
const MAX_TIMER_SECONDS = 2_147_483;
const Seconds = (fallback: number, minimum = 0) =>
  Type.Number({
    ...(minimum > 0 ? { minimum } : { exclusiveMinimum: 0 }),
    maximum: MAX_TIMER_SECONDS,
    default: fallback,
  });

/** One label of a host name: letters, digits and hyphens, 1 to 63 of them, no hyphen first or last. */
const HOST_LABEL = '[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?';

/**
 * Every environment variable Mailroom reads, with its default. Values arrive as strings and are converted to
 * these types before validation, so a bad value is reported against the variable that carried it. A pattern comes
 * with a `description` of what it accepts, which is what a start-up error shows.
 */
export const EnvSchema = Type.Object({
  PORT: Port(3000),
  HOST: Type.String({ minLength: 1, default: '0.0.0.0' }),
  /** A request whose headers and body have not all arrived by then is answered 408 and its connection closed. */
  HTTP_REQUEST_TIMEOUT_SECONDS: Seconds(30),
  /** An idle connection between requests is closed after this long. */
  HTTP_KEEP_ALIVE_TIMEOUT_SECONDS: Seconds(5),
  /** Concurrent HTTP connections; one more is closed as soon as it is accepted. */
  HTTP_MAX_CONNECTIONS: Type.Integer({ minimum: 1, default: 1000 }),
  /** Serves the web console at `/` on the HTTP port. */
  CONSOLE: Flag(true),
  SMTP_PORT: Port(2525),
  SMTP_HOST: Type.String({ minLength: 1, default: '0.0.0.0' }),
  DATA_DIR: Type.String({ minLength: 1, default: './data' }),
  DATABASE_URL: Type.Optional(Type.String({ pattern: '^postgres(ql)?://', description: 'a postgres:// URL' })),
  DATABASE_POOL_SIZE: Type.Integer({ minimum: 1, maximum: 200, default: 10 }),
  /** Longest wait for a PostgreSQL connection: to open one, or for one of the pool's to be free. */
  DATABASE_CONNECT_TIMEOUT_SECONDS: Seconds(10),
  DATABASE_SCHEMA: Type.Optional(
    Type.String({
      pattern: `^[a-z_][a-z0-9_]{0,${MAX_SCHEMA_NAME_BYTES - 1}}$`,
      description: `a schema name of a-z, 0-9 and _ (up to ${MAX_SCHEMA_NAME_BYTES})`,
    }),
  ),
  SQLITE_SYNCHRONOUS: Type.Union([Type.Literal('FULL'), Type.Literal('NORMAL'), Type.Literal('EXTRA')], {
    default: 'FULL',
  }),
  /** A query, fragment, user info or port after the bucket was dropped or read as part of its name. */
  BLOB_STORE: Type.String({
    pattern: '^(fs|s3://[^/?#@:]+(/[^?#]*)?)$',
    default: 'fs',
    description: 'fs or s3://bucket[/prefix]',
  }),
  /** Credentials come from AWS's own variables: user info here would be printed in the start-up banner and log. */
  S3_ENDPOINT: Type.Optional(
    Type.String({
      pattern: '^https?://[^/?#@]+(/[^?#]*)?$',
      description: 'an http:// or https:// URL without user info, query or fragment',
    }),
  ),
  S3_REGION: Type.String({ minLength: 1, default: 'us-east-1' }),
  S3_TIMEOUT_SECONDS: Seconds(30),
  /**
   * The base of the download URLs handed out: a path is kept, but user info, a query or a fragment would end up in the
   * middle of each URL (`...?a=1/api/e2/...`) or hand the credentials to every webhook receiver.
   */
  PUBLIC_URL: Type.Optional(
    Type.String({
      pattern: '^https?://[^/?#@]+(/[^?#]*)?$',
      description: 'an http:// or https:// URL without user info, query or fragment',
    }),
  ),
  /**
   * What domains' MX records must name: a host name of letters, digits and hyphens in dot-separated labels (none
   * starting or ending with a hyphen), an optional final dot. An MX record cannot name an IP address, so the last
   * label is not all digits.
   */
  MX_HOST: Type.Optional(
    Type.String({
      pattern: `^(?=.{1,253}\\.?$)(${HOST_LABEL}\\.)*(?![0-9]+\\.?$)${HOST_LABEL}\\.?$`,
      description: 'a host name such as mx.example.com (an MX record cannot name an IP address)',
    }),
  ),
  DNS_SERVERS: Type.Optional(Type.String({ minLength: 1 })),
  SMTP_RELAY_URL: Type.Optional(Type.String({ pattern: '^smtps?://', description: 'an smtp:// or smtps:// URL' })),
  SMTP_MAX_MESSAGE_BYTES: Type.Integer({ minimum: 1024, default: 40 * 1024 * 1024 }),
  /**
   * Bytes of messages in progress (DATA being received, and messages being stored) held in memory at once, over all
   * connections of a process: a message that would pass it is answered 452 4.3.1, to be sent again later.
   */
  SMTP_MAX_BUFFERED_BYTES: Type.Integer({ minimum: 1024, default: 256 * 1024 * 1024 }),
  SMTP_MAX_CONNECTIONS: Type.Integer({ minimum: 1, default: 200 }),
  /** Concurrent connections one client address (an IPv6 one with the rest of its /64) may hold (per process). */
  SMTP_MAX_CONNECTIONS_PER_IP: Type.Integer({ minimum: 1, default: 10 }),
  /** DATA must carry at least this much per window, or the server says 421 and closes; 0 turns the check off. */
  SMTP_MIN_DATA_RATE_BYTES_PER_SECOND: Type.Integer({ minimum: 0, default: 1024 }),
  SMTP_DATA_RATE_WINDOW_SECONDS: Seconds(30),
  /** Silence allowed between commands and during DATA before the server says 421 and closes. */
  SMTP_IDLE_TIMEOUT_SECONDS: Seconds(60),
  /** A connection is closed after this long, whatever it is doing. */
  SMTP_CONNECTION_TIMEOUT_SECONDS: Seconds(600),
  /** Worker threads that parse received mail and compute its verdicts; unset: one fewer than the CPUs, at least 1. */
  INGEST_WORKERS: Type.Optional(Type.Integer({ minimum: 0, maximum: 64 })),
  /** SpamAssassin's spamd, `spamd://host[:port]` (port 783 by default); unset leaves spam verdicts DISABLED. */
  SPAMD_URL: Type.Optional(Type.String({ pattern: '^spamd://[^/?#@]+/?$', description: 'spamd://host[:port]' })),
  SPAMD_TIMEOUT_SECONDS: Seconds(10),
  TLS_CERT_PATH: Type.Optional(Type.String({ minLength: 1 })),
  TLS_KEY_PATH: Type.Optional(Type.String({ minLength: 1 })),
  /** Sent as `Authorization: Bearer <key>`, so it is one word of visible ASCII: the header carries nothing else. */
  MAILROOM_API_KEY: Type.Optional(
    Type.String({
      minLength: 16,
      pattern: '^[\\x21-\\x7e]+$',
      description: 'at least 16 visible ASCII characters, without spaces',
    }),
  ),
  /** Lets webhooks and forwards reach loopback, private and link-local addresses (tests, LAN setups). */
  ALLOW_PRIVATE_DESTINATIONS: Flag(false),
  /** The older name of ALLOW_PRIVATE_DESTINATIONS; either set to true lifts the guard. */
  WEBHOOK_ALLOW_PRIVATE: Flag(false),
  /** `user+tag@domain` falls back to `user@domain` when no address matches it exactly. */
  SUBADDRESSING: Flag(true),
  DELIVERY_CONCURRENCY: Type.Integer({ minimum: 1, maximum: 1000, default: 32 }),
  DELIVERY_CONCURRENCY_PER_ENDPOINT: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000 })),
  DELIVERY_RETRY_SCALE: Type.Number({ exclusiveMinimum: 0, maximum: 1, default: 1 }),
  DELIVERY_LEASE_SECONDS: Seconds(30, 1),
  DELIVERY_POLL_SECONDS: Seconds(5),
  DELIVERY_YIELD_SECONDS: Type.Number({ minimum: 0, maximum: MAX_TIMER_SECONDS, default: 30 }),
  FORWARD_MX_PORT: Port(25),
  DOMAIN_VERIFY_INTERVAL_SECONDS: Seconds(300),
  /** Bounded so that "now minus this" is still a date: past about 2.4e9 hours every verification pass would fail. */
  DOMAIN_VERIFY_GIVE_UP_HOURS: Type.Number({ exclusiveMinimum: 0, maximum: 100 * 365 * 24, default: 72 }),
  /** How often mail past its retention period is looked for and deleted (src/retention). */
  RETENTION_SWEEP_SECONDS: Seconds(600),
  /** How often each process looks for health alerts to raise or clear, and sends alert webhooks due (src/alerts). */
  ALERT_CHECK_SECONDS: Seconds(60),
  /** How often each verified domain's records are re-checked for DNS drift. */
  ALERT_DNS_CHECK_MINUTES: Type.Number({ exclusiveMinimum: 0, maximum: MAX_TIMER_SECONDS / 60, default: 60 }),
  /** Serves Prometheus metrics at /metrics (src/metrics). */
  METRICS: Flag(true),
  /** A listener of its own for /metrics; unset serves it on the HTTP port. */
  METRICS_PORT: Type.Optional(Type.Integer({ minimum: 0, maximum: 65535 })),
  METRICS_HOST: Type.String({ minLength: 1, default: '127.0.0.1' }),
  /** Unset: api_key on the HTTP port, none on a port of its own. */
  METRICS_AUTH: Type.Optional(Type.Union([Type.Literal('api_key'), Type.Literal('none')])),
  /** Requests per minute per API key, in each process; 0 turns the limit off. */
  API_RATE_LIMIT_PER_MINUTE: Type.Integer({ minimum: 0, default: 0 }),
  /** Messages (MAIL FROM commands) per minute per SMTP client address (IPv6: per /64), in each process; 0: off. */
  SMTP_RATE_LIMIT_PER_MINUTE: Type.Integer({ minimum: 0, default: 0 }),
  /** Emails an account may receive per hour before it is flagged (mail is still stored); 0 turns it off. */
  ACCOUNT_MAIL_LIMIT_PER_HOUR: Type.Integer({ minimum: 0, default: 0 }),
  /**
   * Longest a stop on SIGTERM or SIGINT may take; then the process exits without finishing it (as kill -9 would, which
   * loses nothing acknowledged). A client that never reads its answer, or a database that stopped answering, would
   * otherwise hold it for ever.
   */
  SHUTDOWN_TIMEOUT_SECONDS: Seconds(30),
  LOG_LEVEL: Type.Union(
    ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'].map((level) => Type.Literal(level)),
    { default: 'info' },
  ),
});

export type Env = Static<typeof EnvSchema>;
