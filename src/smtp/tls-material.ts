import { execFile } from 'node:child_process';
import { mkdir, readFile, rename, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { setTimeout as delay } from 'node:timers/promises';
import { promisify } from 'node:util';

export interface TlsMaterial {
  key: Buffer;
  cert: Buffer;
}

const run = promisify(execFile);

/** How long a start waits for another process generating the certificate on the same DATA_DIR. */
const GENERATE_WAIT_MS = 60_000;

/** The certificate first, then the key: a failure names the same file every time. */
async function readPair(certPath: string, keyPath: string): Promise<TlsMaterial> {
  const cert = await readFile(certPath);
  return { cert, key: await readFile(keyPath) };
}

/**
 * The STARTTLS certificate: TLS_CERT_PATH/TLS_KEY_PATH when set; otherwise a self-signed one generated once into
 * DATA_DIR/tls with the system's openssl and reused on every start. Senders that want opportunistic TLS accept a
 * self-signed certificate; production should point the variables at a real one. Processes starting at once on one
 * DATA_DIR (PostgreSQL with S3) take turns: each writing its own pair over the other's could leave one reading a key
 * that does not match its certificate, and refusing to start.
 */
export async function loadTlsMaterial(options: {
  dataDir: string;
  hostname: string;
  certPath?: string;
  keyPath?: string;
}): Promise<TlsMaterial> {
  if (options.certPath && options.keyPath) return readPair(options.certPath, options.keyPath);
  const dir = join(options.dataDir, 'tls');
  const certPath = join(dir, 'smtp-cert.pem');
  const keyPath = join(dir, 'smtp-key.pem');
  try {
    return await readPair(certPath, keyPath);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const lock = await lockDirectory(dir);
  try {
    try {
      return await readPair(certPath, keyPath);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
    }
    // Written aside and moved in key first: whoever finds the certificate finds its key.
    const [keyTemp, certTemp] = [`${keyPath}.${process.pid}.tmp`, `${certPath}.${process.pid}.tmp`];
    try {
      await generatePair(options.hostname, keyTemp, certTemp);
      await rename(keyTemp, keyPath);
      await rename(certTemp, certPath);
    } finally {
      await rm(keyTemp, { force: true });
      await rm(certTemp, { force: true });
    }
    return readPair(certPath, keyPath);
  } finally {
    lock.close();
  }
}

/**
 * SQLite's exclusive lock on an empty file in `dir`, asked for without blocking the event loop; the operating system
 * lets go of it if the process dies.
 */
async function lockDirectory(dir: string): Promise<DatabaseSync> {
  const lock = new DatabaseSync(join(dir, 'generate.lock'), { timeout: 0 });
  for (const deadline = Date.now() + GENERATE_WAIT_MS; ; await delay(50)) {
    try {
      lock.exec('BEGIN EXCLUSIVE');
      return lock;
    } catch (error) {
      if ((error as { errcode?: number }).errcode !== SQLITE_BUSY || Date.now() > deadline) {
        lock.close();
        throw error;
      }
    }
  }
}

const SQLITE_BUSY = 5;

async function generatePair(hostname: string, keyPath: string, certPath: string): Promise<void> {
  const subject = `/CN=${hostname.replace(/[^A-Za-z0-9.-]/g, '') || 'localhost'}`;
  await run('openssl', [
    'req',
    '-x509',
    '-newkey',
    'ec',
    '-pkeyopt',
    'ec_paramgen_curve:prime256v1',
    '-nodes',
    '-days',
    '3650',
    '-subj',
    subject,
    '-keyout',
    keyPath,
    '-out',
    certPath,
  ]);
}
