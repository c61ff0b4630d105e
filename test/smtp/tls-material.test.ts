import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { createSecureContext } from 'node:tls';
import { TEST_DATABASE_URL } from '../helpers/app.ts';
import { createInstallation, type ServerProcess, startServerProcess } from '../helpers/process.ts';
import { type S3Server, startS3Server } from '../helpers/s3.ts';
import { sendMail } from '../helpers/smtp.ts';

const skip = TEST_DATABASE_URL ? false : 'needs TEST_DATABASE_URL (PostgreSQL; on SQLite a DATA_DIR takes one server)';
/** The race between the servers' certificate generations is narrow: several tries at it. */
const ROUNDS = 3;
const SERVERS = 3;

let s3: S3Server | undefined;
const servers: ServerProcess[] = [];
after(async () => {
  for (const server of servers) await server.stop('SIGKILL');
  await s3?.close();
});

test('servers starting at once on a new DATA_DIR (PostgreSQL with S3) all start and offer STARTTLS with one certificate', {
  skip,
}, async () => {
  s3 = await startS3Server();
  for (let round = 0; round < ROUNDS; round++) {
    const installation = await createInstallation({ ...s3.env, MX_HOST: 'mx.tls.test' });
    try {
      // Several processes loading at once on two cores: more time than one start gets elsewhere.
      const started = await Promise.allSettled(
        Array.from({ length: SERVERS }, () => startServerProcess(installation.env, 60_000)),
      );
      servers.push(...started.flatMap((result) => (result.status === 'fulfilled' ? [result.value] : [])));
      assert.deepEqual(
        started.flatMap((result) => (result.status === 'rejected' ? [String(result.reason)] : [])),
        [],
        `round ${round}`,
      );
      const tls = join(installation.dataDir, 'tls');
      const [key, cert] = await Promise.all(['smtp-key.pem', 'smtp-cert.pem'].map((name) => readFile(join(tls, name))));
      assert.doesNotThrow(() => createSecureContext({ key, cert }), 'the key on disk matches the certificate');
      for (const server of servers.splice(0)) {
        const port = Number(/SMTP\s+127\.0\.0\.1:(\d+)/.exec(server.stdout())![1]);
        // STARTTLS, then a refused recipient: the session got past the handshake.
        const sent = await sendMail({ port, to: 'nobody@unknown.test', tls: true });
        assert.match(sent.response, /^550 /, sent.response);
        await server.stop('SIGKILL');
      }
    } finally {
      await installation.remove();
    }
  }
});
