import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { Kysely, type KyselyPlugin, PostgresDialect, sql } from 'kysely';
import pg from 'pg';
import type { DatabaseConfig } from '../config/index.ts';
import { ConfigError, MAX_SCHEMA_NAME_BYTES } from '../core/index.ts';
import { keepAliveSocket } from './pg-socket.ts';
import { pipelineTransactions } from './pipelined-transactions.ts';
import { preparedStatementName } from './prepared-query.ts';
import type { Database } from './schema.ts';
import { createSqliteDialect } from './sqlite-dialect.ts';

export type Db = Kysely<Database>;

/** PostgreSQL's SQLSTATE for a unique violation. */
const UNIQUE_VIOLATION = '23505';

export type { DatabaseConfig };
export type SqliteConfig = Extract<DatabaseConfig, { kind: 'sqlite' }>;

export interface DatabaseHandle {
  db: Db;
  kind: DatabaseConfig['kind'];
  /**
   * PostgreSQL: the server's URL, and the schema the installation's tables are in: DATABASE_SCHEMA, else the first
   * existing schema of the search_path the URL or the role sets. It names the installation's NOTIFY channels, as the
   * tables' triggers do with current_schema().
   */
  postgres?: { url: string; schema: string };
  /** Throws unless the database answers a trivial query. */
  ping(): Promise<void>;
  close(): Promise<void>;
}

export interface OpenOptions {
  /** SQLite: attaches further databases to the connection once it is set up (search's file, for one that searches). */
  attach?: (database: DatabaseSync, config: SqliteConfig) => void;
  /** Kysely plugins every query through the handle runs through. */
  plugins?: KyselyPlugin[];
  /**
   * PostgreSQL, a server's pool: opens this many connections at start and keeps them open while idle, so that the
   * first message after start or after a quiet spell does not wait for connections to be set up and their statements
   * prepared. Other connections (all of them without it, as in the CLI) open when needed and close after 10 s idle.
   */
  keepConnections?: number;
  /**
   * PostgreSQL: each transaction sends BEGIN, and statements marked sent-ahead (see preparedQuery), without waiting for
   * their answers (see pipelineTransactions). For a pool whose queries all run one after another, as Kysely runs a
   * transaction's: ingest's writer.
   */
  pipeline?: boolean;
  /**
   * PostgreSQL with DATABASE_SCHEMA: a schema that does not exist is created, unless this is given, which makes the
   * error thrown instead (the CLI's, where a mistyped schema would become a new, empty installation).
   */
  ifSchemaMissing?: () => Error;
  /** PostgreSQL: told when the server closed one of the pool's idle connections; the pool opens another when needed. */
  onIdleConnectionLost?: (error: Error) => void;
}

export async function openDatabase(config: DatabaseConfig, options: OpenOptions = {}): Promise<DatabaseHandle> {
  const dialect = config.kind === 'sqlite' ? openSqlite(config, options) : await openPostgres(config, options);
  const db = new Kysely<Database>({ dialect, plugins: options.plugins ?? [] });
  return {
    db,
    kind: config.kind,
    ...(config.kind === 'postgres' ? { postgres: { url: config.url, schema: await installationSchema(db) } } : {}),
    ping: async () => {
      await sql`select 1`.execute(db);
    },
    close: () => db.destroy(),
  };
}

function openSqlite(config: SqliteConfig, options: OpenOptions) {
  mkdirSync(dirname(config.file), { recursive: true });
  const database = new DatabaseSync(config.file, { timeout: 5000 });
  database.exec('PRAGMA journal_mode = WAL');
  // FULL fsyncs the WAL at every commit, which is what makes an acknowledged message survive kill -9 and power loss.
  database.exec(`PRAGMA synchronous = ${config.synchronous}`);
  database.exec('PRAGMA foreign_keys = ON');
  // SQLite's default page cache (2 MB) holds a fraction of the pages a connection reads again, so it would read them
  // back from the OS. 16 MiB is an upper bound, filled only as pages are used: the delivery worker catching up after a
  // burst reads thousands of emails once each, and fills whatever bound there is. Ingest's writer thread sets its own
  // on its connection (see writer-thread.ts).
  database.exec('PRAGMA cache_size = -16384');
  // The WAL checkpointer's thread copies the WAL into the database file as it fills (see wal-checkpointer.ts); a
  // connection checkpoints in its own commit only once the WAL passes 32 MiB (8,192 pages of 4 KiB), which bounds
  // the WAL's size, and does all of it where no checkpointer runs (the CLI).
  database.exec('PRAGMA wal_autocheckpoint = 8192');
  options.attach?.(database, config);
  return createSqliteDialect(database);
}

async function openPostgres(config: Extract<DatabaseConfig, { kind: 'postgres' }>, options: OpenOptions) {
  if (config.schema) {
    // search_path only takes effect if the schema exists, so create it before the pool hands out connections.
    const client = new pg.Client({
      connectionString: config.url,
      connectionTimeoutMillis: config.connectTimeoutMs,
      stream: keepAliveSocket,
    });
    await client.connect();
    try {
      // Looked up first: CREATE SCHEMA IF NOT EXISTS needs the database's CREATE privilege even when the schema
      // exists, which a role given only its own schema does not have.
      const found = await client.query('select 1 from pg_namespace where nspname = $1', [config.schema]);
      if (found.rowCount === 0) {
        if (options.ifSchemaMissing) throw options.ifSchemaMissing();
        await client.query(`create schema if not exists "${config.schema}"`).catch((error) => {
          // Servers starting at once race to create it: PostgreSQL's IF NOT EXISTS does not cover a creator that has
          // not committed yet, and the loser gets a unique violation, though the schema then exists as wanted.
          if ((error as { code?: string }).code !== UNIQUE_VIOLATION) throw error;
        });
      }
    } finally {
      await client.end();
    }
  }
  const keep = Math.min(options.keepConnections ?? 0, config.poolSize);
  const pool = new pg.Pool({
    ...connectionSettings(config),
    max: config.poolSize,
    min: keep,
    // Bounds opening a connection and waiting for a free one: a server that stops answering fails requests (503,
    // SMTP 451) instead of holding them.
    connectionTimeoutMillis: config.connectTimeoutMs,
    stream: keepAliveSocket,
    pipeline: options.pipeline ?? false,
  });
  pool.on('connect', (client) => {
    // pg-pool hears a connection's errors only while it is idle. Lost while a query runs on it, the connection's
    // 'error' would go unheard and end the process; the query fails with it, and the pool drops the connection.
    client.on('error', () => {});
    prepareNamedStatements(client);
    if (options.pipeline) pipelineTransactions(client);
  });
  // A restart, a failover or an idle timeout on the server ends idle connections; unheard, the pool's error would
  // end the process.
  pool.on('error', (error) => {
    // pg-pool hangs the whole connection on the error (its settings, buffers and statements): kilobytes per log line.
    Reflect.deleteProperty(error, 'client');
    options.onIdleConnectionLost?.(error);
  });
  const opened = await Promise.all(Array.from({ length: keep }, () => pool.connect()));
  for (const client of opened) client.release();
  return new PostgresDialect({ pool });
}

/**
 * The schema the pool's connections create their tables in. Start-up fails where there is none, or where its name is
 * too long for the installation's NOTIFY channels (the tables' triggers could then not announce their changes).
 */
async function installationSchema(db: Kysely<Database>): Promise<string> {
  const { rows } = await sql<{ schema: string | null }>`select current_schema() as schema`.execute(db);
  const schema = rows[0]?.schema;
  if (schema && Buffer.byteLength(schema) <= MAX_SCHEMA_NAME_BYTES) return schema;
  await db.destroy();
  throw new ConfigError(
    schema
      ? `Invalid configuration: PostgreSQL schema "${schema}" has a name longer than ${MAX_SCHEMA_NAME_BYTES} bytes: use a shorter one`
      : 'Invalid configuration: PostgreSQL has no schema to create tables in: set DATABASE_SCHEMA, or a search_path that names one',
  );
}

/**
 * The pool's URL and startup options: the schema's search_path joins the settings the URL's own `options` carries,
 * as pg lets those replace any options given beside the URL, and the installation's tables would land in `public`.
 */
function connectionSettings(config: Extract<DatabaseConfig, { kind: 'postgres' }>) {
  if (!config.schema) return { connectionString: config.url };
  const url = new URL(config.url);
  const options = [url.searchParams.get('options'), `-c search_path=${config.schema}`].filter(Boolean).join(' ');
  url.searchParams.delete('options');
  return { connectionString: url.toString(), options };
}

/**
 * Runs the prepared queries (see preparedQuery) as named statements on this connection: parsed and planned once,
 * then only bound and executed. Kysely passes every query as text and values, so the name is looked up by its text.
 */
function prepareNamedStatements(client: pg.PoolClient): void {
  const query = client.query.bind(client) as (config: unknown, ...rest: unknown[]) => unknown;
  client.query = ((config: unknown, ...rest: unknown[]) => {
    const name = typeof config === 'string' ? preparedStatementName(config) : undefined;
    return name ? query({ name, text: config, values: rest[0] }, ...rest.slice(1)) : query(config, ...rest);
  }) as typeof client.query;
}
