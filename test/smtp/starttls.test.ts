import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import { mkdtemp, readFile, rename, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import type { SecureVersion } from 'node:tls';
import { promisify } from 'node:util';
import { startTestApp, type TestApp } from '../helpers/app.ts';
import { createInstallation, runScript } from '../helpers/process.ts';
import { openSmtpConversation } from '../helpers/smtp.ts';

const run = promisify(execFile);

let dir: string;
let server: TestApp;
const warnings: string[] = [];
const certPath = () => join(dir, 'live', 'cert.pem');
const keyPath = () => join(dir, 'live', 'key.pem');

/** A self-signed pair for mx.mailroom.test, as files in `dir` named after `name`. */
async function makePair(name: string) {
  const [key, cert] = [join(dir, `${name}-key.pem`), join(dir, `${name}-cert.pem`)];
  await run('openssl', [
    ...['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-days', '90'],
    ...['-subj', '/CN=mx.mailroom.test', '-keyout', key, '-out', cert],
  ]);
  return { key, cert, fingerprint: new X509Certificate(await readFile(cert)).fingerprint256 };
}

/** Puts a file in place as certbot does: written aside, then moved over the one in use. */
async function install(from: string, to: string) {
  await writeFile(`${to}.new`, await readFile(from));
  await rename(`${to}.new`, to);
}

/** The fingerprint of the certificate a new connection's STARTTLS is served, after which the session goes on. */
async function servedFingerprint(): Promise<string> {
  const client = await openSmtpConversation(server.smtpPort);
  assert.match(await client.command('EHLO client.test'), /^250[- ]/);
  assert.equal(await client.startTls(), '220 2.0.0 Ready to start TLS');
  const fingerprint = client.peerCertificate()!.fingerprint256;
  assert.match(await client.command('EHLO client.test'), /^250[- ]/);
  assert.equal(await client.quit(), '221 2.0.0 Bye');
  return fingerprint;
}

before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'mailroom-tls-'));
  await run('mkdir', [join(dir, 'live')]);
});
after(async () => {
  await server?.close();
  await rm(dir, { recursive: true, force: true });
});

test('TLS_CERT_PATH/TLS_KEY_PATH renewed on disk (as certbot does) are served at the next STARTTLS, without a restart', async () => {
  const [first, renewed, third] = [await makePair('first'), await makePair('renewed'), await makePair('third')];
  await install(first.cert, certPath());
  await install(first.key, keyPath());
  server = await startTestApp(
    { TLS_CERT_PATH: certPath(), TLS_KEY_PATH: keyPath(), DNS_SERVERS: '127.0.0.1:9' },
    { warnings },
  );
  assert.equal(await servedFingerprint(), first.fingerprint);

  // Between the two files of a renewal the new certificate does not match the old key: the old pair stays in use.
  await install(renewed.cert, certPath());
  assert.equal(await servedFingerprint(), first.fingerprint);
  assert.deepEqual(warnings, ['TLS certificate files changed but do not load: previous one kept']);

  await install(renewed.key, keyPath());
  assert.equal(await servedFingerprint(), renewed.fingerprint);
  assert.equal(await servedFingerprint(), renewed.fingerprint);

  // Files rewritten in place count too.
  await writeFile(certPath(), await readFile(third.cert));
  await writeFile(keyPath(), await readFile(third.key));
  assert.equal(await servedFingerprint(), third.fingerprint);

  // certbot's live/ files are symlinks into archive/, moved to the new files at a renewal.
  const fourth = await makePair('fourth');
  for (const [target, link] of [
    [fourth.cert, certPath()],
    [fourth.key, keyPath()],
  ] as const) {
    await symlink(target, `${link}.link`);
    await rename(`${link}.link`, link);
  }
  assert.equal(await servedFingerprint(), fourth.fingerprint);
  assert.equal(warnings.length, 1);
});

test('commands pipelined after STARTTLS in its packet are discarded, not run inside the TLS session', async () => {
  const client = await openSmtpConversation(server.smtpPort);
  assert.match(await client.command('EHLO client.test'), /^250[- ]/);
  assert.equal(
    await client.startTls('MAIL FROM:<injected@attacker.test>\r\nRCPT TO:<inbox@mailroom.test>\r\n'),
    '220 2.0.0 Ready to start TLS',
  );
  assert.equal(client.encrypted, true);
  // The session starts anew: no EHLO yet and no transaction, and no reply to the injected commands comes first.
  assert.equal(await client.command('MAIL FROM:<ann@sender.test>'), '503 5.5.1 Error: send HELO/EHLO first');
  assert.match(await client.command('EHLO client.test'), /^250[- ]/);
  assert.equal(await client.command('RCPT TO:<inbox@mailroom.test>'), '503 5.5.1 Error: need MAIL command');
  assert.equal(await client.quit(), '221 2.0.0 Bye');
});

test('TLS 1.0 and 1.1 are refused (RFC 8996); TLS 1.2 and 1.3 are offered', async () => {
  const handshake = async (version: SecureVersion) => {
    const client = await openSmtpConversation(server.smtpPort);
    assert.match(await client.command('EHLO client.test'), /^250[- ]/);
    try {
      // The client's own floor (OpenSSL's security level) lowered, so that only the server's decides.
      await client.startTls('', { minVersion: version, maxVersion: version, ciphers: 'DEFAULT:@SECLEVEL=0' });
      return `${client.tlsProtocol()} ${client.tlsCipher()}`;
    } catch (error) {
      return (error as NodeJS.ErrnoException).code;
    } finally {
      await client.destroy();
    }
  };
  assert.equal(await handshake('TLSv1'), 'ERR_SSL_TLSV1_ALERT_PROTOCOL_VERSION');
  assert.equal(await handshake('TLSv1.1'), 'ERR_SSL_TLSV1_ALERT_PROTOCOL_VERSION');
  assert.equal(await handshake('TLSv1.2'), 'TLSv1.2 ECDHE-ECDSA-AES128-GCM-SHA256');
  assert.equal(await handshake('TLSv1.3'), 'TLSv1.3 TLS_AES_256_GCM_SHA384');
});

/** The certificate a STARTTLS to `app` is served. */
async function servedCertificate(app: TestApp): Promise<X509Certificate> {
  const client = await openSmtpConversation(app.smtpPort);
  assert.match(await client.command('EHLO client.test'), /^250[- ]/);
  assert.equal(await client.startTls(), '220 2.0.0 Ready to start TLS');
  const certificate = client.peerCertificate()!;
  assert.equal(await client.quit(), '221 2.0.0 Bye');
  return certificate;
}

test('the self-signed certificate names MX_HOST in its subjectAltName, and follows MX_HOST to a new name with its key', async () => {
  const dataDir = join(dir, 'data');
  const start = async (mxHost: string) => {
    const app = await startTestApp({ DATA_DIR: dataDir, MX_HOST: mxHost, DNS_SERVERS: '127.0.0.1:9' });
    try {
      return await servedCertificate(app);
    } finally {
      await app.close();
    }
  };
  const first = await start('mx.first.test');
  assert.equal(first.subjectAltName, 'DNS:mx.first.test');
  assert.equal(first.subject, 'CN=mx.first.test');
  // A restart under the same name keeps the certificate.
  assert.equal((await start('mx.first.test')).fingerprint256, first.fingerprint256);

  const long = `${'a'.repeat(60)}.example.test`;
  const moved = await start(long);
  assert.equal(moved.subjectAltName, `DNS:${long}`);
  assert.equal(moved.checkHost(long), long);
  assert.equal(moved.checkHost('mx.first.test'), undefined);
  assert.equal(
    moved.publicKey.export({ type: 'spki', format: 'der' }).toString('hex'),
    first.publicKey.export({ type: 'spki', format: 'der' }).toString('hex'),
  );
});

test('a certificate or key that does not load refuses the start in one line naming the file at fault', async () => {
  const [one, other] = [await makePair('one'), await makePair('other')];
  const notPem = import.meta.filename;
  const refusal = async (certPath: string, keyPath: string) => {
    const installation = await createInstallation({ TLS_CERT_PATH: certPath, TLS_KEY_PATH: keyPath });
    try {
      const result = await runScript('src/main.ts', [], installation.env, undefined, 20_000);
      assert.equal(result.code, 1);
      assert.equal(result.stdout, '');
      return result.stderr;
    } finally {
      await installation.remove();
    }
  };
  const lead = 'Cannot start: the TLS certificate or key is not usable:';
  assert.equal(
    await refusal(one.cert, other.key),
    `${lead} the key at TLS_KEY_PATH ${other.key} is not the certificate's at TLS_CERT_PATH ${one.cert}: ` +
      'error:05800074:x509 certificate routines::key values mismatch\n',
  );
  assert.equal(
    await refusal(one.key, one.key),
    `${lead} TLS_CERT_PATH ${one.key} holds no usable certificate: error:0480006C:PEM routines::no start line\n`,
  );
  assert.equal(
    await refusal(one.cert, notPem),
    `${lead} TLS_KEY_PATH ${notPem} holds no usable private key: error:1E08010C:DECODER routines::unsupported\n`,
  );
});
