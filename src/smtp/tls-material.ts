import { execFile } from 'node:child_process';
import { mkdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';

export interface TlsMaterial {
  key: Buffer;
  cert: Buffer;
}

const run = promisify(execFile);

/** The certificate first, then the key: a failure names the same file every time. */
async function readPair(certPath: string, keyPath: string): Promise<TlsMaterial> {
  const cert = await readFile(certPath);
  return { cert, key: await readFile(keyPath) };
}

/**
 * The STARTTLS certificate: TLS_CERT_PATH/TLS_KEY_PATH when set; otherwise a self-signed one generated once into
 * DATA_DIR/tls with the system's openssl and reused on every start. Senders that want opportunistic TLS accept a
 * self-signed certificate; production should point the variables at a real one.
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
  const subject = `/CN=${options.hostname.replace(/[^A-Za-z0-9.-]/g, '') || 'localhost'}`;
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
  return readPair(certPath, keyPath);
}
