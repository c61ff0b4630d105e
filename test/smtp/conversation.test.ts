import assert from 'node:assert/strict';
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { startTestApp, type TestApp } from '../helpers/app.ts';
import { rawBlobKeys } from '../helpers/blobs.ts';
import { type DnsServer, startDnsServer } from '../helpers/dns-server.ts';
import { createVerifiedDomain } from '../helpers/domains.ts';
import { type ApiClient, apiClient } from '../helpers/http.ts';
import { openSmtpConversation, sendMail } from '../helpers/smtp.ts';
import { createAddress } from './mail-setup.ts';

const MAX_BYTES = 64 * 1024;

let dns: DnsServer;
let server: TestApp;
let api: ApiClient;

before(async () => {
  dns = await startDnsServer();
  server = await startTestApp({ DNS_SERVERS: dns.address, SMTP_MAX_MESSAGE_BYTES: String(MAX_BYTES) });
  api = apiClient(server.baseUrl, server.apiKey);
  const { id: domainId } = await createVerifiedDomain(api, dns, 'smtp.test');
  await createAddress(api, 'inbox@smtp.test', domainId);
  await createAddress(api, 'second@smtp.test', domainId);
  await createAddress(api, 'paused@smtp.test', domainId, { isActive: false });
  const pending = await api.post('/api/v2/domains', { domain: 'unverified.test' });
  await createAddress(api, 'inbox@unverified.test', pending.body.id);
});
after(async () => {
  await server.close();
  await dns.close();
});

async function emailCount(): Promise<number> {
  const row = await server.app.database.db
    .selectFrom('emails')
    .select((eb) => eb.fn.countAll().as('n'))
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

/** Every file under the blob directory: segments only, no temporary or partial files. */
async function blobFiles(): Promise<string[]> {
  const root = join(server.dataDir, 'blobs');
  const entries = await readdir(root, { recursive: true, withFileTypes: true }).catch(() => []);
  return entries.filter((entry) => entry.isFile()).map((entry) => join(entry.parentPath, entry.name));
}

const storedBlobs = () => rawBlobKeys(server.app.blobs);

function bodyOf(bytes: number): string {
  const line = `${'x'.repeat(76)}\r\n`;
  return line.repeat(Math.ceil(bytes / line.length));
}

describe('SMTP conversation over a real socket', () => {
  test('EHLO announces SIZE, 8BITMIME, PIPELINING, SMTPUTF8, STARTTLS and ENHANCEDSTATUSCODES, and no AUTH', async () => {
    const smtp = await openSmtpConversation(server.smtpPort);
    assert.match(smtp.greeting, /^220 mx\.mailroom\.test ESMTP Mailroom$/);
    const ehlo = await smtp.command('EHLO client.test');
    const lines = ehlo.split('\r\n').map((line) => line.slice(4));
    assert.equal(lines[0], 'mx.mailroom.test Nice to meet you, [127.0.0.1]');
    assert.deepEqual(lines.slice(1).sort(), [
      '8BITMIME',
      'ENHANCEDSTATUSCODES',
      'PIPELINING',
      `SIZE ${MAX_BYTES}`,
      'SMTPUTF8',
      'STARTTLS',
    ]);
    assert.equal(await smtp.command('AUTH PLAIN AGJvYgBzZWNyZXQ='), '500 5.5.2 Error: command not recognized');
    assert.equal(await smtp.quit(), '221 2.0.0 Bye');
  });

  test('STARTTLS upgrades the session, then a message is delivered and stored', async () => {
    const smtp = await openSmtpConversation(server.smtpPort);
    await smtp.command('EHLO client.test');
    assert.equal(await smtp.startTls(), '220 2.0.0 Ready to start TLS');
    assert.equal(smtp.encrypted, true);
    const ehlo = await smtp.command('EHLO client.test');
    assert.doesNotMatch(ehlo, /STARTTLS/);
    await smtp.quit();

    const sent = await sendMail({ port: server.smtpPort, to: 'inbox@smtp.test', subject: 'over TLS', tls: true });
    assert.equal(sent.ok, true, sent.response);
    assert.match(sent.response, /^250 2\.6\.0 Ok: queued as email_[0-9a-z]{26}$/);
    const row = await server.app.database.db
      .selectFrom('emails')
      .select(['subject', 'recipient'])
      .where('id', '=', sent.queuedIds[0]!)
      .executeTakeFirstOrThrow();
    assert.deepEqual({ ...row }, { subject: 'over TLS', recipient: 'inbox@smtp.test' });
    const blob = await server.app.blobs.get(
      (
        await server.app.database.db
          .selectFrom('emails')
          .select('raw_blob_key')
          .where('id', '=', sent.queuedIds[0]!)
          .executeTakeFirstOrThrow()
      ).raw_blob_key,
    );
    const raw = Buffer.concat(await blob.toArray()).toString();
    assert.match(
      raw,
      /^Return-Path: <sender@sender\.test>\r\nReceived: from client\.test \(\[127\.0\.0\.1\]\)\r\n\tby mx\.mailroom\.test \(Mailroom\) with ESMTPS id msg_/,
    );
  });

  test('a declared size over the limit is refused at MAIL FROM with 552 5.3.4', async () => {
    const smtp = await openSmtpConversation(server.smtpPort);
    await smtp.command('EHLO client.test');
    const reply = await smtp.command(`MAIL FROM:<a@sender.test> SIZE=${MAX_BYTES + 1}`);
    assert.equal(reply, `552 5.3.4 Error: message exceeds fixed maximum message size ${MAX_BYTES}`);
    await smtp.quit();
  });

  test('an undeclared oversize body is read to the end, refused with 552 5.3.4, nothing is stored, and the server stays healthy', async () => {
    const before = await emailCount();
    const blobsBefore = await storedBlobs();
    const smtp = await openSmtpConversation(server.smtpPort);
    await smtp.command('EHLO client.test');
    assert.equal(await smtp.command('MAIL FROM:<a@sender.test>'), '250 2.1.0 Accepted');
    assert.equal(await smtp.command('RCPT TO:<inbox@smtp.test>'), '250 2.1.5 Accepted');
    assert.equal(await smtp.command('DATA'), '354 End data with <CR><LF>.<CR><LF>');
    await smtp.write(`Subject: too big\r\n\r\n${bodyOf(MAX_BYTES * 4)}.\r\n`);
    assert.equal(await smtp.reply(), `552 5.3.4 Error: message exceeds fixed maximum message size ${MAX_BYTES}`);
    // The same connection can still send a message within the limit.
    assert.equal(await smtp.command('MAIL FROM:<a@sender.test>'), '250 2.1.0 Accepted');
    assert.equal(await smtp.command('RCPT TO:<inbox@smtp.test>'), '250 2.1.5 Accepted');
    assert.equal(await smtp.command('DATA'), '354 End data with <CR><LF>.<CR><LF>');
    await smtp.write('Subject: small\r\n\r\nfits\r\n.\r\n');
    assert.match(await smtp.reply(), /^250 2\.6\.0 Ok: queued as email_/);
    await smtp.quit();
    assert.equal(await emailCount(), before + 1);
    assert.equal((await storedBlobs()).length, blobsBefore.length + 1);
  });

  test('RCPT to a domain Mailroom does not host is a relay attempt: 550 5.7.1', async () => {
    const smtp = await openSmtpConversation(server.smtpPort);
    await smtp.command('EHLO client.test');
    await smtp.command('MAIL FROM:<a@sender.test>');
    assert.equal(await smtp.command('RCPT TO:<victim@gmail.test>'), '550 5.7.1 Relaying denied');
    assert.equal(await smtp.command('DATA'), '503 5.5.1 Error: need RCPT command');
    await smtp.quit();
  });

  test('unknown and inactive recipients are refused with 550 5.1.1 User unknown', async () => {
    const smtp = await openSmtpConversation(server.smtpPort);
    await smtp.command('EHLO client.test');
    await smtp.command('MAIL FROM:<a@sender.test>');
    for (const recipient of ['nobody@smtp.test', 'paused@smtp.test']) {
      assert.equal(
        await smtp.command(`RCPT TO:<${recipient}>`),
        `550 5.1.1 <${recipient}>: Recipient address rejected: User unknown`,
      );
    }
    await smtp.quit();
  });

  test('a recipient on an unverified domain is refused with 550 5.1.1 saying the domain is not verified', async () => {
    const smtp = await openSmtpConversation(server.smtpPort);
    await smtp.command('EHLO client.test');
    await smtp.command('MAIL FROM:<a@sender.test>');
    assert.equal(
      await smtp.command('RCPT TO:<inbox@unverified.test>'),
      '550 5.1.1 <inbox@unverified.test>: Recipient address rejected: Domain not verified yet',
    );
    await smtp.quit();
  });

  test('a mix of recipients stores the message only for the accepted ones', async () => {
    const sent = await sendMail({
      port: server.smtpPort,
      to: ['inbox@smtp.test', 'victim@gmail.test', 'nobody@smtp.test', 'second@smtp.test'],
      subject: 'mixed',
    });
    assert.equal(sent.ok, true, sent.response);
    assert.deepEqual(sent.accepted, ['inbox@smtp.test', 'second@smtp.test']);
    assert.deepEqual(sent.rejected, ['victim@gmail.test', 'nobody@smtp.test']);
    assert.equal(sent.queuedIds.length, 2);
    const rows = await server.app.database.db
      .selectFrom('emails')
      .select(['id', 'recipient', 'raw_blob_key'])
      .where('subject', '=', 'mixed')
      .orderBy('recipient')
      .execute();
    assert.deepEqual(
      rows.map((row) => row.recipient),
      ['inbox@smtp.test', 'second@smtp.test'],
    );
    assert.deepEqual(rows.map((row) => row.id).sort(), [...sent.queuedIds].sort());
    assert.equal(rows[0]!.raw_blob_key, rows[1]!.raw_blob_key);
  });

  test('the 101st recipient gets 452 4.5.3 and the message is stored for the first 100', async () => {
    const smtp = await openSmtpConversation(server.smtpPort);
    await smtp.command('EHLO client.test');
    await smtp.command('MAIL FROM:<a@sender.test>');
    for (let i = 0; i < 100; i++) {
      assert.equal(await smtp.command(`RCPT TO:<inbox+${i}@smtp.test>`), '250 2.1.5 Accepted');
    }
    assert.equal(await smtp.command('RCPT TO:<inbox+100@smtp.test>'), '452 4.5.3 Error: too many recipients');
    assert.equal(await smtp.command('DATA'), '354 End data with <CR><LF>.<CR><LF>');
    await smtp.write('Subject: hundred\r\n\r\nmany\r\n.\r\n');
    assert.match(await smtp.reply(), /^250 2\.6\.0 Ok: queued as (email_\w+ ){5}\(\+95 more\)$/);
    await smtp.quit();
    const row = await server.app.database.db
      .selectFrom('emails')
      .select((eb) => eb.fn.countAll().as('n'))
      .where('subject', '=', 'hundred')
      .executeTakeFirstOrThrow();
    assert.equal(Number(row.n), 100);
  });

  test('a client that disconnects mid-DATA leaves no row, no blob and no temporary file behind', async () => {
    const before = await emailCount();
    const blobsBefore = await storedBlobs();
    const filesBefore = await blobFiles();
    const smtp = await openSmtpConversation(server.smtpPort);
    await smtp.command('EHLO client.test');
    await smtp.command('MAIL FROM:<a@sender.test>');
    await smtp.command('RCPT TO:<inbox@smtp.test>');
    await smtp.command('DATA');
    await smtp.write(`Subject: cut off\r\n\r\n${bodyOf(20_000)}`);
    await smtp.destroy();
    // The server is still healthy, and a full message sent afterwards is the only new one.
    const sent = await sendMail({ port: server.smtpPort, to: 'inbox@smtp.test', subject: 'after the cut' });
    assert.equal(sent.ok, true, sent.response);
    assert.equal(await emailCount(), before + 1);
    assert.deepEqual((await storedBlobs()).filter((key) => !blobsBefore.includes(key)).length, 1);
    const newFiles = (await blobFiles()).filter((path) => !filesBefore.includes(path));
    assert.ok(newFiles.every((path) => path.endsWith('.seg')) && newFiles.length <= 1, newFiles.join(', '));
    const subjects = await server.app.database.db.selectFrom('emails').select('subject').execute();
    assert.equal(subjects.filter((row) => row.subject === 'cut off').length, 0);
  });
});
