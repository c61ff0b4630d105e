import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { extractAttachment } from '../../src/mime/index.ts';
import type { TestApp } from '../helpers/app.ts';
import { type DnsServer, startDnsServer } from '../helpers/dns-server.ts';
import { createVerifiedDomain } from '../helpers/domains.ts';
import { apiClient } from '../helpers/http.ts';
import { sendMail } from '../helpers/smtp.ts';
import { createAddress } from '../smtp/mail-setup.ts';

const CORPUS_DIR = join(import.meta.dirname, '..', 'fixtures', 'mime');
/** The stored fields each corpus message must produce, read back from the database. */
const EXPECTED: Record<string, Record<string, unknown>> = JSON.parse(
  readFileSync(join(import.meta.dirname, '..', 'fixtures', 'mime-expected.json'), 'utf8'),
);

/**
 * The stored-content suite, run once per blob store: every corpus message goes through SMTP and ingest, and the row
 * and the raw blob are read back and compared field by field.
 */
export function storedContentSuite(
  label: string,
  start: (dnsAddress: string) => Promise<TestApp>,
  /** Where the store puts a raw message: bucket, key prefix in it, and the shape of the key it answers with. */
  expectedBucket: (server: TestApp) => { bucketName: string; keyPrefix: string; key: RegExp },
) {
  let dns: DnsServer;
  let server: TestApp;

  async function deliver(raw: Buffer) {
    const sent = await sendMail({ port: server.smtpPort, to: 'support@inbox.test', raw });
    assert.equal(sent.ok, true, sent.response);
    return server.app.database.db
      .selectFrom('emails')
      .selectAll()
      .where('id', '=', sent.queuedIds[0]!)
      .executeTakeFirstOrThrow();
  }

  async function rawOf(key: string): Promise<Buffer> {
    return Buffer.concat(await (await server.app.blobs.get(key)).toArray());
  }

  before(async () => {
    dns = await startDnsServer();
    server = await start(dns.address);
    const api = apiClient(server.baseUrl, server.apiKey);
    const domain = await createVerifiedDomain(api, dns, 'inbox.test');
    await createAddress(api, 'support@inbox.test', domain.id);
  });
  after(async () => {
    await server.close();
    await dns.close();
  });

  describe(`stored content (${label} blob store)`, () => {
    for (const file of readdirSync(CORPUS_DIR).sort()) {
      test(`${file}: every parsed field is stored exactly, and the blob is the received bytes behind our Received header`, async () => {
        const raw = readFileSync(join(CORPUS_DIR, file));
        const row = await deliver(raw);
        assert.deepEqual(
          {
            messageId: row.message_id,
            subject: row.subject,
            fromAddress: row.from_address,
            fromName: row.from_name,
            from: JSON.parse(row.from_json ?? 'null'),
            to: JSON.parse(row.to_json ?? 'null'),
            cc: JSON.parse(row.cc_json ?? 'null'),
            replyTo: JSON.parse(row.reply_to_json ?? 'null'),
            sentDate: row.sent_date,
            inReplyTo: row.in_reply_to,
            references: JSON.parse(row.references_json ?? 'null'),
            textBody: row.text_body,
            htmlBody: row.html_body,
            headers: JSON.parse(row.headers_json ?? 'null'),
            attachments: JSON.parse(row.attachments_json),
            parseSuccess: row.parse_success === 1,
            parseError: row.parse_error,
          },
          EXPECTED[file],
        );
        assert.equal(row.attachment_count, (EXPECTED[file]!.attachments as unknown[]).length);
        assert.equal(row.recipient, 'support@inbox.test');
        assert.equal(row.mail_from, 'sender@sender.test');
        assert.equal(row.helo, 'client.test');
        assert.equal(row.client_ip, '127.0.0.1');
        assert.deepEqual(
          [row.spf, row.dkim, row.dmarc, row.arc, row.spam, row.virus],
          ['NONE', 'NONE', 'NONE', 'NONE', 'DISABLED', 'DISABLED'],
        );

        const stored = await rawOf(row.raw_blob_key);
        const headerEnd = stored.indexOf('\r\n', stored.indexOf('+0000')) + 2;
        assert.match(
          stored.subarray(0, headerEnd).toString(),
          /^Return-Path: <sender@sender\.test>\r\nReceived: from client\.test \(\[127\.0\.0\.1\]\)\r\n\tby mx\.mailroom\.test \(Mailroom\) with ESMTP id msg_[0-9a-z]{26}\r\n\tfor <support@inbox\.test>;\r\n\t\w{3}, \d\d \w{3} \d{4} \d\d:\d\d:\d\d \+0000\r\n$/,
        );
        assert.ok(stored.subarray(headerEnd).equals(raw));
        assert.equal(row.raw_size, stored.length);
        const { bucketName, keyPrefix, key } = expectedBucket(server);
        assert.deepEqual(server.app.blobs.location(row.raw_blob_key), {
          bucketName,
          objectKey: `${keyPrefix}${row.raw_blob_key}`,
        });
        assert.match(row.raw_blob_key, key);
      });
    }

    test('attachments are downloadable from the raw message by their index in attachments_json', async () => {
      const row = await deliver(readFileSync(join(CORPUS_DIR, 'unicode-attachment.eml')));
      const pdf = Buffer.concat([Buffer.from('%PDF-1.4\n'), Buffer.alloc(1024, 0), Buffer.from('\n%%EOF\n')]);
      for (let i = 0; i < 1024; i++) pdf[9 + i] = i % 256;
      const first = await extractAttachment(await server.app.blobs.get(row.raw_blob_key), 0);
      assert.deepEqual(first?.meta, {
        filename: 'résumé ✓.pdf',
        contentType: 'application/pdf',
        contentId: null,
        contentDisposition: 'attachment',
      });
      assert.ok(Buffer.concat(await first!.stream.toArray()).equals(pdf));
      const second = await extractAttachment(await server.app.blobs.get(row.raw_blob_key), 1);
      assert.equal(second?.meta.filename, 'данные.csv');
      assert.equal(Buffer.concat(await second!.stream.toArray()).toString(), 'a,b\r\n1,2');
      assert.equal(await extractAttachment(await server.app.blobs.get(row.raw_blob_key), 2), null);

      const cid = await deliver(readFileSync(join(CORPUS_DIR, 'inline-cid.eml')));
      const image = await extractAttachment(await server.app.blobs.get(cid.raw_blob_key), 0);
      assert.equal(image?.meta.contentId, '<logo@sender.test>');
      assert.equal(
        Buffer.concat(await image!.stream.toArray())
          .subarray(1, 4)
          .toString(),
        'PNG',
      );

      const nested = await deliver(readFileSync(join(CORPUS_DIR, 'nested-rfc822.eml')));
      const inner = await extractAttachment(await server.app.blobs.get(nested.raw_blob_key), 0);
      assert.equal(inner?.meta.contentType, 'message/rfc822');
      assert.match(Buffer.concat(await inner!.stream.toArray()).toString(), /^From: customer@customer\.test\r\n/);
    });

    test('a 2 MB single-line text part is stored whole', async () => {
      const line = 'abcdefghij'.repeat(209_716);
      const raw = Buffer.from(
        `From: big@sender.test\r\nTo: support@inbox.test\r\nSubject: One long line\r\nMessage-ID: <long-1@sender.test>\r\nContent-Type: text/plain; charset=us-ascii\r\n\r\n${line}\r\n`,
      );
      const row = await deliver(raw);
      assert.equal(row.parse_success, 1);
      assert.equal(row.text_body, `${line}\n`);
      assert.equal(row.html_body, null);
      assert.equal(row.raw_size, (await rawOf(row.raw_blob_key)).length);
    });

    test('a text body over 5,000,000 characters is cut before a surrogate pair the cut would split', async () => {
      // The emoji's two UTF-16 halves are characters 5,000,000 and 5,000,001.
      const kept = 'a'.repeat(4_999_999);
      const raw = Buffer.from(
        `From: big@sender.test\r\nTo: support@inbox.test\r\nSubject: Cut\r\nMessage-ID: <cut-1@sender.test>\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Transfer-Encoding: 8bit\r\n\r\n${kept}\u{1f600}tail\r\n`,
      );
      const row = await deliver(raw);
      assert.equal(row.text_body?.length, kept.length);
      assert.ok(row.text_body === kept, 'the body is the characters before the emoji');
    });

    test('a byte range of the raw message can be read back', async () => {
      const raw = readFileSync(join(CORPUS_DIR, 'plain-text.eml'));
      const row = await deliver(raw);
      const start = row.raw_size - raw.length;
      const slice = Buffer.concat(
        await (await server.app.blobs.getRange(row.raw_blob_key, start, start + 5)).toArray(),
      );
      assert.equal(slice.toString(), 'From: ');
    });
  });
}
