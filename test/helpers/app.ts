import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import pg from 'pg';
import { pino } from 'pino';
import { type App, createApp } from '../../src/app.ts';
import { loadConfig } from '../../src/config/index.ts';
import type { Clock } from '../../src/core/index.ts';

/** Set by `.ci/run` (and by anyone who wants to) to run the suite against PostgreSQL instead of SQLite. */
export const TEST_DATABASE_URL = process.env.TEST_DATABASE_URL;

export interface TestApp {
  app: App;
  baseUrl: string;
  /** The loopback port the SMTP receiver listens on. */
  smtpPort: number;
  /** The metrics listener's address, when METRICS_PORT gives it one. */
  metricsUrl?: string;
  apiKey: string;
  dataDir: string;
  /** A key of a fresh account, for isolation tests. */
  newAccountKey(name: string): Promise<string>;
  /** What the server has logged at error level so far (close() fails the test file on any). */
  loggedErrors(): readonly string[];
  close(): Promise<void>;
}

/** What a test may give the app besides configuration. */
export interface TestAppOptions {
  /** The services' "now", for tests that move time forward. */
  clock?: Clock;
  /** Given, the messages the server logs at warning level are pushed to it. */
  warnings?: string[];
}

/**
 * Starts a real Mailroom on loopback port 0 with its own data directory and, on PostgreSQL, its own schema.
 * `env` overrides configuration variables exactly as a deployment would set them.
 */
export async function startTestApp(env: Record<string, string> = {}, options: TestAppOptions = {}): Promise<TestApp> {
  const dataDir = await mkdtemp(join(tmpdir(), 'mailroom-test-'));
  const schema = TEST_DATABASE_URL ? `t_${randomBytes(6).toString('hex')}` : undefined;
  const apiKey = `mr_test_${randomBytes(16).toString('hex')}`;
  const config = loadConfig({
    PORT: '0',
    HOST: '127.0.0.1',
    SMTP_PORT: '0',
    SMTP_HOST: '127.0.0.1',
    DATA_DIR: dataDir,
    MAILROOM_API_KEY: apiKey,
    MX_HOST: 'mx.mailroom.test',
    LOG_LEVEL: 'silent',
    WEBHOOK_ALLOW_PRIVATE: 'true',
    ...(TEST_DATABASE_URL
      ? { DATABASE_URL: TEST_DATABASE_URL, DATABASE_SCHEMA: schema!, DATABASE_POOL_SIZE: '4' }
      : {}),
    ...env,
  });
  // Every unhandled error the server logs (what a client would see as a 500) fails the test file at close().
  const serverErrors: string[] = [];
  const errorSink = new Writable({
    write(chunk, _encoding, done) {
      const line = String(chunk);
      const { level, msg } = JSON.parse(line) as { level: number; msg: string };
      if (level >= 50) serverErrors.push(line);
      else options.warnings?.push(msg);
      done();
    },
  });
  const logger = pino({ level: options.warnings ? 'warn' : 'error' }, errorSink);
  const app = await createApp(config, { logger, clock: options.clock });
  await app.accounts.ensureKey('default', apiKey);
  const { httpUrl, smtpPort, metricsUrl } = await app.start();
  return {
    app,
    baseUrl: httpUrl,
    smtpPort,
    metricsUrl,
    apiKey,
    dataDir,
    newAccountKey: async (name) => (await app.accounts.createKey(name)).key,
    loggedErrors: () => [...serverErrors],
    async close() {
      await app.close();
      await rm(dataDir, { recursive: true, force: true });
      if (schema) {
        const client = new pg.Client({ connectionString: TEST_DATABASE_URL });
        await client.connect();
        await client.query(`drop schema if exists "${schema}" cascade`);
        await client.end();
      }
      if (serverErrors.length > 0) throw new Error(`The server logged errors:\n${serverErrors.join('')}`);
    },
  };
}

/**
 * A second app on `first`'s PostgreSQL schema, as a second process of one installation, for what two processes do at
 * once; none on SQLite, where an installation is one process.
 */
export async function startSecondInstance(first: TestApp, env: Record<string, string>): Promise<TestApp | undefined> {
  const database = first.app.config.database;
  if (!TEST_DATABASE_URL || database.kind !== 'postgres') return undefined;
  return startTestApp({ ...env, DATABASE_SCHEMA: database.schema! });
}
