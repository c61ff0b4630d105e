import assert from 'node:assert/strict';
import { type FSWatcher, watch } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { type MailroomProcess, startMailroom } from '../delivery/processes.ts';
import { TEST_DATABASE_URL } from '../helpers/app.ts';
import { type DnsServer, startDnsServer } from '../helpers/dns-server.ts';
import { createVerifiedDomain } from '../helpers/domains.ts';
import { createInstallation } from '../helpers/process.ts';
import { sendMail } from '../helpers/smtp.ts';
import { createAddress } from '../smtp/mail-setup.ts';

const API_KEY = 'mr_test_temp_files_key_0123456789';

let dns: DnsServer;
let installation: Awaited<ReturnType<typeof createInstallation>>;
let server: MailroomProcess | undefined;
let watcher: FSWatcher | undefined;
let sqliteTempDir: string;

before(async () => {
  if (TEST_DATABASE_URL) return;
  dns = await startDnsServer();
  installation = await createInstallation({
    DNS_SERVERS: dns.address,
    MAILROOM_API_KEY: API_KEY,
    // All 80 messages are sent at once from loopback.
    SMTP_MAX_CONNECTIONS_PER_IP: '80',
  });
  // SQLite puts its temporary files in SQLITE_TMPDIR when that names a writable directory.
  sqliteTempDir = join(installation.dataDir, 'sqlite-tmp');
  await mkdir(sqliteTempDir);
  server = await startMailroom({ ...installation.env, SQLITE_TMPDIR: sqliteTempDir }, API_KEY);
});
after(async () => {
  watcher?.close();
  await server?.stop('SIGKILL');
  await installation?.remove();
  await dns?.close();
});

test('ingest commits many messages together without creating a temporary file', {
  skip: TEST_DATABASE_URL ? 'SQLite only' : false,
}, async () => {
  const domain = await createVerifiedDomain(server!.api, dns, 'temp-files.test');
  await createAddress(server!.api, 'inbox@temp-files.test', domain.id);
  // SQLite creates a temporary file and unlinks it at once, so it is seen only as it appears.
  const seen: string[] = [];
  watcher = watch(sqliteTempDir, (event, name) => seen.push(`${event} ${name}`));

  // Sent side by side, the messages share commits, as they do under load.
  const sent = await Promise.all(
    Array.from({ length: 80 }, (_, i) =>
      sendMail({
        port: server!.smtpPort,
        to: 'inbox@temp-files.test',
        subject: `Message ${i}`,
        text: `Words of message ${i}: ${'alpha beta gamma delta '.repeat(400)}`,
      }),
    ),
  );
  assert.deepEqual(
    sent.map((result) => result.code),
    Array(80).fill(250),
  );
  const found = await server!.api.get('/api/v2/mail?search=gamma&limit=100');
  assert.equal(found.status, 200);
  assert.equal((found.body as { pagination: { total: number } }).pagination.total, 80);
  assert.deepEqual(seen, []);
});
