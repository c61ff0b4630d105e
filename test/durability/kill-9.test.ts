import assert from 'node:assert/strict';
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { openFsBlobStore } from '../../src/blobs/index.ts';
import { openDatabase } from '../../src/db/index.ts';
import { TEST_DATABASE_URL } from '../helpers/app.ts';
import { rawBlobKeys } from '../helpers/blobs.ts';
import { type DnsServer, startDnsServer } from '../helpers/dns-server.ts';
import { createVerifiedDomain } from '../helpers/domains.ts';
import { apiClient } from '../helpers/http.ts';
import { freePort } from '../helpers/ports.ts';
import { createInstallation, type ServerProcess, startServerProcess } from '../helpers/process.ts';
import { openSmtpConversation, type SmtpConversation } from '../helpers/smtp.ts';
import { createAddress } from '../smtp/mail-setup.ts';

const API_KEY = 'mr_test_durability_key_0123456789';

let dns: DnsServer;
let installation: Awaited<ReturnType<typeof createInstallation>>;
let smtpPort: number;
let server: ServerProcess;
let endpointId: string;
/** Message-ID to the id the server gave in its 250 reply. */
const acknowledged = new Map<string, string>();
/** Every message a DATA was started for, acknowledged or not. */
const attempted = new Set<string>();

before(async () => {
  dns = await startDnsServer();
  smtpPort = await freePort();
  installation = await createInstallation({
    DNS_SERVERS: dns.address,
    SMTP_PORT: String(smtpPort),
    MAILROOM_API_KEY: API_KEY,
  });
  server = await startServerProcess(installation.env);
  const api = apiClient(server.httpUrl, API_KEY);
  const domain = await createVerifiedDomain(api, dns, 'durable.test');
  const endpoint = await api.post('/api/v2/endpoints', {
    name: 'receiver',
    type: 'webhook',
    config: { url: 'http://127.0.0.1:9/hook' },
  });
  assert.equal(endpoint.status, 201, JSON.stringify(endpoint.body));
  endpointId = endpoint.body.id;
  await createAddress(api, 'inbox@durable.test', domain.id, { endpointId });
});
after(async () => {
  await server?.stop('SIGKILL');
  await installation?.remove();
  await dns?.close();
});

async function openSession(): Promise<SmtpConversation> {
  const smtp = await openSmtpConversation(smtpPort);
  await smtp.command('EHLO client.test');
  return smtp;
}

/** One transaction; resolves to the final reply ('' if the server died before answering). */
async function sendOne(smtp: SmtpConversation, messageId: string, onReply?: (reply: string) => void): Promise<string> {
  await smtp.command('MAIL FROM:<sender@sender.test>');
  await smtp.command('RCPT TO:<inbox@durable.test>');
  const go = await smtp.command('DATA');
  if (!go.startsWith('354')) return go;
  attempted.add(messageId);
  await smtp.write(`Message-ID: ${messageId}\r\nSubject: durable\r\n\r\n${'body line\r\n'.repeat(200)}.\r\n`);
  const reply = await smtp.reply();
  const queued = /^250 .*queued as (email_\w+)$/.exec(reply);
  if (queued) acknowledged.set(messageId, queued[1]!);
  onReply?.(reply);
  return reply;
}

function killNow() {
  server.child.kill('SIGKILL');
}

async function restart() {
  await new Promise<void>((resolve) => {
    if (server.child.exitCode !== null || server.child.signalCode !== null) resolve();
    else server.child.once('exit', () => resolve());
  });
  server = await startServerProcess(installation.env);
}

test('kill -9 right after a 250, at several points: every acknowledged message is stored once with its delivery job, and nothing is half-stored', async () => {
  // 1. One connection, killed immediately after the 250 of its 6th message.
  const single = await openSession();
  for (let i = 1; i <= 6; i++) {
    await sendOne(single, `<one-${i}@sender.test>`, i === 6 ? killNow : undefined);
  }
  await single.destroy();
  await restart();

  // 2. Four connections sending at once, killed right after the 10th 250 of the round, with others in flight.
  const sessions = await Promise.all([1, 2, 3, 4].map(() => openSession()));
  let roundAcks = 0;
  await Promise.all(
    sessions.map(async (smtp, c) => {
      for (let i = 1; i <= 8; i++) {
        const reply = await sendOne(smtp, `<many-${c}-${i}@sender.test>`, (answer) => {
          if (answer.startsWith('250') && ++roundAcks === 10) killNow();
        });
        if (!reply.startsWith('250')) break;
      }
      await smtp.destroy();
    }),
  );
  await restart();

  // 3. Killed right after a 250 while a second client is halfway through its DATA.
  const writer = await openSession();
  await writer.command('MAIL FROM:<sender@sender.test>');
  await writer.command('RCPT TO:<inbox@durable.test>');
  await writer.command('DATA');
  await writer.write('Message-ID: <half@sender.test>\r\nSubject: half\r\n\r\nonly part of the body');
  const last = await openSession();
  await sendOne(last, '<last@sender.test>', killNow);
  await Promise.all([writer.destroy(), last.destroy()]);
  await restart();

  // A normal message after the last restart still goes through.
  const after = await openSession();
  assert.match(await sendOne(after, '<after@sender.test>'), /^250 /);
  await after.quit();
  // Search sees every stored email, also those a kill left stored but not yet in the search index.
  const search = await apiClient(server.httpUrl, API_KEY).get('/api/v2/mail?limit=100&search=durable');
  assert.equal(search.status, 200, JSON.stringify(search.body));
  const searched = search.body.emails.map((email: { id: string }) => email.id).sort();
  assert.equal(await server.stop('SIGTERM'), 0);

  assert.ok(acknowledged.size >= 6 + 10 + 2, `acknowledged ${acknowledged.size}`);
  const handle = await openDatabase(
    TEST_DATABASE_URL
      ? {
          kind: 'postgres',
          url: TEST_DATABASE_URL,
          schema: installation.env.DATABASE_SCHEMA,
          poolSize: 2,
          connectTimeoutMs: 10_000,
        }
      : { kind: 'sqlite', file: join(installation.dataDir, 'mailroom.sqlite'), synchronous: 'FULL' },
  );
  try {
    const emails = await handle.db.selectFrom('emails').select(['id', 'message_id', 'raw_blob_key']).execute();
    const jobs = await handle.db.selectFrom('deliveries').select(['email_id', 'target_id']).execute();

    for (const [messageId, emailId] of acknowledged) {
      const stored = emails.filter((email) => email.message_id === messageId);
      assert.deepEqual(
        stored.map((email) => email.id),
        [emailId],
        `${messageId} is stored exactly once`,
      );
      assert.deepEqual(
        jobs.filter((job) => job.email_id === emailId).map((job) => job.target_id),
        [endpointId],
        `${messageId} has its delivery job`,
      );
    }
    // Unacknowledged messages may have been committed just before the kill, but never twice and never in part.
    assert.equal(new Set(emails.map((email) => email.message_id)).size, emails.length);
    for (const email of emails) {
      assert.ok(attempted.has(email.message_id!), `${email.message_id} was sent`);
      assert.equal(jobs.filter((job) => job.email_id === email.id).length, 1, `${email.message_id} has one job`);
    }
    assert.equal(emails.filter((email) => email.message_id === '<half@sender.test>').length, 0);
    assert.deepEqual(searched, emails.map((email) => email.id).sort(), 'search finds every stored email');

    // Blobs the kills left without a row were dropped by the restarts' recovery: what the store lists is exactly what
    // the rows refer to, and each reads back as its own message.
    const blobs = await openFsBlobStore(join(installation.dataDir, 'blobs'));
    assert.deepEqual(
      await rawBlobKeys(blobs),
      emails.map((email) => email.raw_blob_key).sort(),
      'one blob per row, no orphans',
    );
    for (const email of emails) {
      const raw = Buffer.concat(await (await blobs.get(email.raw_blob_key)).toArray()).toString();
      assert.ok(raw.includes(`Message-ID: ${email.message_id}\r\n`), `${email.message_id}'s blob is its message`);
    }
    const files = await readdir(join(installation.dataDir, 'blobs'), { recursive: true, withFileTypes: true });
    assert.deepEqual(
      files.filter((entry) => entry.isFile() && !entry.name.endsWith('.seg')).map((entry) => entry.name),
      [],
      'nothing but segments',
    );
  } finally {
    await handle.close();
  }
});
