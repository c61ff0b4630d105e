import { execFile } from 'node:child_process';
import { createPrivateKey, X509Certificate } from 'node:crypto';
import type { Stats } from 'node:fs';
import { mkdir, open, rename, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { setTimeout as delay } from 'node:timers/promises';
import { createSecureContext } from 'node:tls';
import { promisify } from 'node:util';
import type { Logger } from '../core/index.ts';

export interface TlsMaterial {
  key: Buffer;
  cert: Buffer;
}

/** The material and the files it was read from, read again at a STARTTLS once they are replaced (`tlsRenewals`). */
export interface TlsFiles extends TlsMaterial {
  certPath: string;
  keyPath: string;
  /** The files' identity when read (see `identity`). */
  read: string;
}

const run = promisify(execFile);

/** How long a start waits for another process generating the certificate on the same DATA_DIR. */
const GENERATE_WAIT_MS = 60_000;

/** The certificate first, then the key: a failure names the same file every time. */
async function readPair(certPath: string, keyPath: string): Promise<TlsFiles> {
  const [cert, certRead] = await readWithIdentity(certPath);
  const [key, keyRead] = await readWithIdentity(keyPath);
  return { cert, key, certPath, keyPath, read: `${certRead} ${keyRead}` };
}

/** A file's content and the identity of what was read, without a moment between them for a renewal to fall in. */
async function readWithIdentity(path: string): Promise<[Buffer, string]> {
  const file = await open(path);
  try {
    return [await file.readFile(), fileIdentity(await file.stat())];
  } finally {
    await file.close();
  }
}

/**
 * What changes when either file is replaced or rewritten (certbot renews by pointing its symlinks at new files, which
 * `stat` follows).
 */
async function identity(certPath: string, keyPath: string): Promise<string> {
  return (await Promise.all([stat(certPath), stat(keyPath)])).map(fileIdentity).join(' ');
}

const fileIdentity = (file: Stats) => `${file.dev}:${file.ino}:${file.size}:${file.mtimeMs}:${file.ctimeMs}`;

/** What `tlsRenewals` saw last while a file was missing. */
const GONE = 'gone';

/**
 * A look at the certificate and key files, to be called before each STARTTLS: when they have changed since last read
 * and load, `renewed` is handed the new material, so that a renewed certificate is served without a restart. Material
 * that does not load (a key that does not match the certificate, as between the two files of a renewal) is logged
 * once per change while the one last loaded stays in use. Calls at once share one look.
 */
export function tlsRenewals(files: TlsFiles, logger: Logger, renewed: (material: TlsMaterial) => void) {
  const { certPath, keyPath } = files;
  const unusable = (error: unknown) =>
    logger.warn({ err: error, certPath, keyPath }, 'TLS certificate files changed but do not load: previous one kept');
  let seen = files.read;
  let looking: Promise<void> | undefined;
  const look = async (): Promise<void> => {
    let now: string;
    try {
      now = await identity(certPath, keyPath);
    } catch (error) {
      // A file missing for a moment is said once, and looked for again on the next call.
      if (seen !== GONE) unusable(error);
      seen = GONE;
      return;
    }
    if (now === seen) return;
    seen = now;
    try {
      const material = await readPair(certPath, keyPath);
      createSecureContext({ key: material.key, cert: material.cert });
      renewed({ key: material.key, cert: material.cert });
      logger.info({ certPath }, 'TLS certificate reloaded');
    } catch (error) {
      unusable(error);
    }
  };
  return (): Promise<void> => {
    looking ??= look().finally(() => {
      looking = undefined;
    });
    return looking;
  };
}

/**
 * smtp-server's TLS options: the material, and no protocol older than TLS 1.2 (RFC 8996), where smtp-server asks for
 * TLS 1.0 and only the OpenSSL that Node is built with refuses it.
 */
export function serverTlsOptions(material: TlsMaterial) {
  return { key: material.key, cert: material.cert, minVersion: 'TLSv1.2' as const };
}

/**
 * Makes an smtp-server connection's STARTTLS wait for `ready` (`tlsRenewals`). The parser waits for the handler's
 * callback, so commands pipelined after STARTTLS are still discarded at the upgrade (RFC 3207 §4.2).
 */
export function beforeStartTls(connection: unknown, ready: () => Promise<unknown>): void {
  const handlers = connection as { handler_STARTTLS(command: Buffer, done: () => void): void };
  const startTls = handlers.handler_STARTTLS.bind(connection);
  handlers.handler_STARTTLS = (command, done) => void ready().then(() => startTls(command, done));
}

/**
 * The STARTTLS certificate: TLS_CERT_PATH/TLS_KEY_PATH when set; otherwise a self-signed one for MX_HOST generated
 * once into DATA_DIR/tls with the system's openssl and reused on every start, issued again (same key) once MX_HOST
 * names another host. Senders that want opportunistic TLS accept a
 * self-signed certificate; production should point the variables at a real one. Processes starting at once on one
 * DATA_DIR (PostgreSQL with S3) take turns: each writing its own pair over the other's could leave one reading a key
 * that does not match its certificate, and refusing to start.
 */
export async function loadTlsMaterial(options: {
  dataDir: string;
  hostname: string;
  certPath?: string;
  keyPath?: string;
}): Promise<TlsFiles> {
  if (options.certPath && options.keyPath) return checked(await readPair(options.certPath, options.keyPath));
  const dir = join(options.dataDir, 'tls');
  const certPath = join(dir, 'smtp-cert.pem');
  const keyPath = join(dir, 'smtp-key.pem');
  const name = options.hostname.replace(/[^A-Za-z0-9.-]/g, '') || 'localhost';
  const current = await readIfPresent(certPath, keyPath);
  if (current && names(current, name)) return current;
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const lock = await lockDirectory(dir);
  try {
    const existing = await readIfPresent(certPath, keyPath);
    if (existing && names(existing, name)) return existing;
    // Written aside and moved in key first: whoever finds the certificate finds its key.
    const [keyTemp, certTemp] = [`${keyPath}.${process.pid}.tmp`, `${certPath}.${process.pid}.tmp`];
    try {
      // One for another name (MX_HOST changed) is issued again with the same key, which a DANE record may pin.
      if (existing) await issue(name, ['-key', keyPath], certTemp);
      else {
        await issue(name, ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-keyout', keyTemp], certTemp);
        await rename(keyTemp, keyPath);
      }
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
 * The operator's files, once they load as a pair; otherwise OpenSSL's error (a one-line refusal at start), its message
 * led by the variable whose file is at fault.
 */
function checked(files: TlsFiles): TlsFiles {
  try {
    createSecureContext({ key: files.key, cert: files.cert });
    return files;
  } catch (error) {
    const fails = (load: () => unknown) => {
      try {
        load();
        return false;
      } catch {
        return true;
      }
    };
    const [cert, key] = [`TLS_CERT_PATH ${files.certPath}`, `TLS_KEY_PATH ${files.keyPath}`];
    const fault = fails(() => new X509Certificate(files.cert))
      ? `${cert} holds no usable certificate`
      : fails(() => createPrivateKey(files.key))
        ? `${key} holds no usable private key`
        : `the key at ${key} is not the certificate's at ${cert}`;
    (error as Error).message = `${fault}: ${(error as Error).message}`;
    throw error;
  }
}

async function readIfPresent(certPath: string, keyPath: string): Promise<TlsFiles | undefined> {
  try {
    return await readPair(certPath, keyPath);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
    return undefined;
  }
}

/** Whether the certificate is for `name` (by its subjectAltName, or the CN of one made before it had one). */
function names(material: TlsMaterial, name: string): boolean {
  return new X509Certificate(material.cert).checkHost(name) !== undefined;
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

/**
 * A self-signed certificate for `name`, valid for ten years, of the key `keyOptions` give or make. The name is in its
 * subjectAltName, which is what clients check; a CN holds at most 64 characters, a host name up to 253.
 */
async function issue(name: string, keyOptions: string[], certPath: string): Promise<void> {
  const subject = name.length <= 64 ? `/CN=${name}` : '/O=Mailroom';
  await run('openssl', [
    ...['req', '-x509', '-nodes', '-days', '3650', ...keyOptions],
    ...['-subj', subject, '-addext', `subjectAltName=DNS:${name}`, '-out', certPath],
  ]);
}
