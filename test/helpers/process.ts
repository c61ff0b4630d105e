import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { TEST_DATABASE_URL } from './app.ts';

const ROOT = join(import.meta.dirname, '..', '..');

/**
 * The environment of one Mailroom installation run as child processes: its own data directory and, on
 * PostgreSQL, its own schema. Several processes started with the same `env` share one database.
 */
export async function createInstallation(extra: Record<string, string> = {}) {
  const dataDir = await mkdtemp(join(tmpdir(), 'mailroom-proc-'));
  const schema = TEST_DATABASE_URL ? `p_${randomBytes(6).toString('hex')}` : undefined;
  const env: Record<string, string> = {
    PATH: process.env.PATH ?? '',
    HOME: process.env.HOME ?? '',
    DATA_DIR: dataDir,
    HOST: '127.0.0.1',
    PORT: '0',
    SMTP_HOST: '127.0.0.1',
    SMTP_PORT: '0',
    MX_HOST: 'mx.mailroom.test',
    LOG_LEVEL: 'warn',
    WEBHOOK_ALLOW_PRIVATE: 'true',
    ...(TEST_DATABASE_URL
      ? { DATABASE_URL: TEST_DATABASE_URL, DATABASE_SCHEMA: schema!, DATABASE_POOL_SIZE: '4' }
      : {}),
    ...extra,
  };
  return {
    env,
    dataDir,
    async remove() {
      await rm(dataDir, { recursive: true, force: true });
      if (schema) {
        const client = new pg.Client({ connectionString: TEST_DATABASE_URL });
        await client.connect();
        await client.query(`drop schema if exists "${schema}" cascade`);
        await client.end();
      }
    },
  };
}

export interface RunResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/**
 * Runs a project script (e.g. `src/main.ts`) with the project's Node and waits for it to exit; given `timeoutMs`, one
 * still running then is killed (exit code null).
 */
export function runScript(
  script: string,
  args: string[],
  env: Record<string, string>,
  cwd = ROOT,
  timeoutMs?: number,
): Promise<RunResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [join(ROOT, script), ...args], {
      env,
      cwd,
      timeout: timeoutMs,
      killSignal: 'SIGKILL',
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk) => {
      stdout += chunk;
    });
    child.stderr.on('data', (chunk) => {
      stderr += chunk;
    });
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

/** Runs the `mailroom` CLI as `npx mailroom` does (bin/mailroom.mjs) and waits for it to exit. */
export function runCli(args: string[], env: Record<string, string>): Promise<RunResult> {
  return runScript('bin/mailroom.mjs', args, env);
}

export interface ServerProcess {
  child: ChildProcess;
  httpUrl: string;
  stdout(): string;
  /** Sends a signal and waits for the exit code. */
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

export interface StartOptions {
  /** The project script and its arguments; `src/main.ts` (what `npm start` runs) by default. */
  command?: string[];
  cwd?: string;
  /** Start-up is over once stdout matches this; the banner's HTTP line by default. */
  ready?: RegExp;
}

/** Starts a Mailroom server process and resolves once it prints where its HTTP API listens (and `ready` matches). */
export function startServerProcess(
  env: Record<string, string>,
  timeoutMs = 20_000,
  options: StartOptions = {},
): Promise<ServerProcess> {
  const [script, ...args] = options.command ?? ['src/main.ts'];
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [join(ROOT, script!), ...args], { env, cwd: options.cwd ?? ROOT });
    let stdout = '';
    let stderr = '';
    const exited = new Promise<number | null>((done) => child.on('exit', (code) => done(code)));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`server did not start in ${timeoutMs} ms:\n${stdout}\n${stderr}`));
    }, timeoutMs);
    child.stderr.on('data', (chunk) => {
      stderr += chunk;
    });
    child.stdout.on('data', (chunk) => {
      stdout += chunk;
      const match = stdout.match(/API at (http:\/\/[^,\s]+)/);
      if (match && (!options.ready || options.ready.test(stdout))) {
        clearTimeout(timer);
        resolve({
          child,
          httpUrl: match[1]!,
          stdout: () => stdout,
          stop: async (signal = 'SIGTERM') => {
            child.kill(signal);
            return exited;
          },
        });
      }
    });
    child.on('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`server exited with ${code} before listening:\n${stdout}\n${stderr}`));
    });
  });
}

/** The log entry with this message, waited for: pino writes asynchronously, so it may follow the banner. */
export async function logEntry(server: ServerProcess, msg: string) {
  for (let wait = 0; wait < 50; wait++) {
    const entry = server
      .stdout()
      .split('\n')
      .filter((line) => line.startsWith('{'))
      .map((line) => JSON.parse(line))
      .find((line) => line.msg === msg);
    if (entry) return entry;
    await sleep(100);
  }
  assert.fail(`no log entry "${msg}" in:\n${server.stdout()}`);
}
