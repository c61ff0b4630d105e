import assert from 'node:assert/strict';
import { mkdir, mkdtemp, readdir, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { TEST_DATABASE_URL } from '../helpers/app.ts';
import { type DnsServer, startDnsServer } from '../helpers/dns-server.ts';
import { createVerifiedDomain } from '../helpers/domains.ts';
import { apiClient } from '../helpers/http.ts';
import { freePort } from '../helpers/ports.ts';
import { createInstallation, runCli, startServerProcess } from '../helpers/process.ts';
import { sendMail } from '../helpers/smtp.ts';
import { createAddress } from '../smtp/mail-setup.ts';

const API_KEY = 'mr_test_backup_key_0123456789';

let dns: DnsServer;
let scratch: string;
before(async () => {
  dns = await startDnsServer();
  scratch = await mkdtemp(join(tmpdir(), 'mailroom-backup-'));
});
after(async () => {
  await dns.close();
  await rm(scratch, { recursive: true, force: true });
});

const message = (subject: string, body: string) =>
  `From: a@sender.test\r\nTo: inbox@backup.test\r\nSubject: ${subject}\r\nMessage-ID: <${subject}@sender.test>\r\n\r\n${body}\r\n`;

describe('mailroom backup on SQLite', { skip: Boolean(TEST_DATABASE_URL) }, () => {
  test('a backup taken while the server receives is a DATA_DIR holding the mail acknowledged before it', async () => {
    const smtpPort = await freePort();
    const installation = await createInstallation({
      DNS_SERVERS: dns.address,
      SMTP_PORT: String(smtpPort),
      MAILROOM_API_KEY: API_KEY,
    });
    const target = join(scratch, 'taken-while-running');
    const server = await startServerProcess(installation.env);
    try {
      const api = apiClient(server.httpUrl, API_KEY);
      const domain = await createVerifiedDomain(api, dns, 'backup.test');
      await createAddress(api, 'inbox@backup.test', domain.id);
      const sent = ['aardvark', 'badger', 'capybara'].map((subject) => message(subject, `About the ${subject}.`));
      for (const raw of sent)
        assert.equal((await sendMail({ port: smtpPort, to: 'inbox@backup.test', raw })).code, 250);

      const backup = await runCli(['backup', target], installation.env);
      assert.equal(backup.stderr, '');
      assert.equal(backup.code, 0);
      // The segment being written has its next 1 MiB written with zeros already (see Segment), and is copied whole.
      const copied = await readdir(join(target, 'blobs'), { recursive: true, withFileTypes: true });
      const files = copied.filter((entry) => entry.isFile()).map((entry) => join(entry.parentPath, entry.name));
      assert.equal(files.length, 1);
      const megabytes = ((await stat(files[0]!)).size / 1024 / 1024).toFixed(1);
      assert.match(
        backup.stdout,
        new RegExp(
          `^Backed up DATA_DIR ${installation.dataDir} to ${target}: the database \\(\\d+\\.\\d MB\\) and 1 blob ` +
            `file \\(${megabytes} MB\\)\\. To restore it, start Mailroom with DATA_DIR=${target}\\n$`,
        ),
      );
      const later = message('dormouse', 'After the backup.');
      assert.equal((await sendMail({ port: smtpPort, to: 'inbox@backup.test', raw: later })).code, 250);
      await server.stop('SIGKILL');

      const restored = await startServerProcess({ ...installation.env, DATA_DIR: target, SMTP_PORT: '0' });
      try {
        const restoredApi = apiClient(restored.httpUrl, API_KEY);
        const list = await restoredApi.get('/api/v2/mail?limit=10');
        assert.equal(list.status, 200);
        const emails = list.body.emails as Array<{ id: string; subject: string }>;
        assert.deepEqual(emails.map((email) => email.subject).sort(), ['aardvark', 'badger', 'capybara']);
        for (const email of emails) {
          const raw = await restoredApi.get(`/api/v2/mail/${email.id}/raw`);
          assert.equal(raw.status, 200);
          assert.ok(raw.body.endsWith(message(email.subject, `About the ${email.subject}.`)), email.subject);
        }
        // The search index is not in the backup: the restored server builds it again.
        const found = await restoredApi.get('/api/v2/mail?search=badger');
        assert.deepEqual(
          found.body.emails.map((email: { subject: string }) => email.subject),
          ['badger'],
        );
        assert.equal(await restored.stop('SIGTERM'), 0);
      } finally {
        restored.child.kill('SIGKILL');
      }
    } finally {
      server.child.kill('SIGKILL');
      await installation.remove();
    }
  });

  test('an installation with no mail yet backs up to a DATA_DIR too', async () => {
    const installation = await createInstallation({ MAILROOM_API_KEY: API_KEY });
    const target = join(scratch, 'of-a-new-installation');
    try {
      const first = await startServerProcess(installation.env);
      await first.stop('SIGTERM');
      const backup = await runCli(['backup', target], installation.env);
      assert.equal(backup.stderr, '');
      assert.equal(backup.code, 0);
      assert.match(
        backup.stdout,
        new RegExp(
          `^Backed up DATA_DIR ${installation.dataDir} to ${target}: the database \\(\\d+\\.\\d MB\\) and 0 blob ` +
            `files \\(0\\.0 MB\\)\\. To restore it, start Mailroom with DATA_DIR=${target}\\n$`,
        ),
      );
      const restored = await startServerProcess({ ...installation.env, DATA_DIR: target, SMTP_PORT: '0' });
      try {
        const list = await apiClient(restored.httpUrl, API_KEY).get('/api/v2/mail?limit=10');
        assert.deepEqual([list.status, list.body.emails], [200, []]);
        assert.equal(await restored.stop('SIGTERM'), 0);
      } finally {
        restored.child.kill('SIGKILL');
      }
    } finally {
      await installation.remove();
    }
  });

  test('it refuses a directory that is not empty, one inside DATA_DIR and a DATA_DIR with no installation', async () => {
    const installation = await createInstallation();
    try {
      const first = await startServerProcess(installation.env);
      await first.stop('SIGTERM');
      const full = join(scratch, 'not-empty');
      await mkdir(full);
      await writeFile(join(full, 'notes.txt'), 'keep me');
      const missing = await createInstallation();
      await missing.remove();
      const cases: Array<[Record<string, string>, string, string]> = [
        [installation.env, full, `${full} is not empty: name a new or empty directory for the backup`],
        [
          installation.env,
          join(installation.dataDir, 'backup'),
          `The backup cannot go inside DATA_DIR ${installation.dataDir}: name a directory outside it`,
        ],
        [
          missing.env,
          join(scratch, 'of-nothing'),
          `No Mailroom installation in DATA_DIR ${missing.dataDir}: run the CLI with the server's settings`,
        ],
      ];
      for (const [env, target, error] of cases) {
        const result = await runCli(['backup', target], env);
        assert.deepEqual([result.code, result.stderr, result.stdout], [1, `${error}\n`, ''], target);
      }
    } finally {
      await installation.remove();
    }
  });
});

test('mailroom backup on PostgreSQL says how to back up instead', { skip: !TEST_DATABASE_URL }, async () => {
  const installation = await createInstallation();
  try {
    const result = await runCli(['backup', join(scratch, 'pg')], installation.env);
    assert.deepEqual(
      [result.code, result.stderr, result.stdout],
      [
        1,
        'mailroom backup copies a SQLite installation: on PostgreSQL, back up its schema with pg_dump --schema and ' +
          'the blob store with the tools of its own\n',
        '',
      ],
    );
  } finally {
    await installation.remove();
  }
});
