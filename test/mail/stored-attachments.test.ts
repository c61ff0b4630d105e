import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { type MailWorld, startMailWorld } from './setup.ts';

/** Attachments read back out of stored mail whose bytes or types are unusual, as ingest listed them. */
let world: MailWorld;

const RECIPIENT = 'files@stored.test';

/** MailParser's limit on one MIME node's header (1 MiB less the CRLF that ends it): one byte more fails the parse. */
const MAX_HEADER_BYTES = 1024 * 1024 - 2;

function multipart(headers: string, parts: string[]): string {
  return `${headers}\r\n${parts.map((part) => `--B\r\n${part}\r\n`).join('')}--B--\r\n`;
}

const pdf = (name: string, content: string) =>
  `Content-Type: application/pdf; name="${name}"\r\n` +
  `Content-Disposition: attachment; filename="${name}"\r\n\r\n${content}`;

const id = (index: number, content: string) =>
  `att_${index}_${createHash('sha256').update(content).digest('hex').slice(0, 12)}`;

async function download(emailId: string, part: string) {
  const response = await fetch(`${world.server.baseUrl}/api/e2/attachments/${emailId}/${part}`, {
    headers: { authorization: `Bearer ${world.server.apiKey}` },
  });
  return { response, body: Buffer.from(await response.arrayBuffer()) };
}

async function deliver(raw: string | Buffer): Promise<string> {
  const [emailId] = await world.deliver({ from: 'sender@files.test', to: RECIPIENT, raw });
  return emailId!;
}

before(async () => {
  world = await startMailWorld([RECIPIENT]);
});
after(() => world.close());

describe('attachments are read from exactly the bytes ingest parsed, not our Received: header before them', () => {
  test('a message whose first line starts with a space lists and serves its attachment', async () => {
    // Behind our Received: header that first line would read as a continuation of it, and the message as no multipart.
    const emailId = await deliver(
      multipart(
        ' Content-Type: multipart/mixed; boundary="B"\r\nSubject: Leading space\r\nMessage-ID: <lead@files.test>\r\n',
        ['Content-Type: text/plain\r\n\r\nhi', pdf('a.pdf', 'PDF-BYTES')],
      ),
    );
    const listed = await world.api.get(`/api/e2/attachments/${emailId}`);
    assert.equal(listed.status, 200);
    assert.deepEqual(
      listed.body.data.map((attachment: { id: string; filename: string; size: number }) => [
        attachment.id,
        attachment.filename,
        attachment.size,
      ]),
      [[id(0, 'PDF-BYTES'), 'a.pdf', 9]],
    );
    for (const part of ['parts/0', `parts/${id(0, 'PDF-BYTES')}`, 'a.pdf']) {
      const { response, body } = await download(emailId, part);
      assert.equal(response.status, 200, part);
      assert.equal(body.toString(), 'PDF-BYTES', part);
      assert.equal(response.headers.get('content-length'), '9', part);
    }
  });

  test('a leading space before one of two Content-Types serves the listed part, not the other one', async () => {
    // Ingest reads boundary B (the first line is a header of its own); behind our header only C would count.
    const inner = '--C\r\nContent-Type: application/x-other; name="other.bin"\r\n\r\nOTHER-PART-BYTES\r\n--C--';
    const emailId = await deliver(
      multipart(
        ' Content-Type: multipart/mixed; boundary="B"\r\n' +
          'Content-Type: multipart/mixed; boundary="C"\r\nSubject: Two types\r\n',
        [pdf('listed.pdf', inner)],
      ),
    );
    const listed = await world.api.get(`/api/v2/mail/${emailId}`);
    assert.deepEqual(
      listed.body.attachments.map((attachment: { filename: string; size: number }) => [
        attachment.filename,
        attachment.size,
      ]),
      [['listed.pdf', inner.length]],
    );
    const { response, body } = await download(emailId, 'parts/0');
    assert.equal(response.status, 200);
    assert.equal(body.toString(), inner);
    assert.equal(response.headers.get('content-type'), 'application/pdf');
  });

  test('a top-level header just under the parser limit still serves its attachment', async () => {
    const start = 'From: sender@files.test\r\nSubject: Long header\r\nX-Pad: ';
    const end = '\r\nContent-Type: multipart/mixed; boundary="B"\r\n';
    const headers = `${start}${'p'.repeat(MAX_HEADER_BYTES - start.length - end.length)}${end}`;
    const emailId = await deliver(multipart(headers, [pdf('a.pdf', 'PDF-BYTES')]));
    const detail = await world.api.get(`/api/v2/mail/${emailId}`);
    assert.equal(detail.body.metadata.parseSuccess, true);
    const listed = await world.api.get(`/api/e2/attachments/${emailId}`);
    assert.equal(listed.status, 200);
    assert.equal(listed.body.data[0].id, id(0, 'PDF-BYTES'));
    for (const part of ['parts/0', 'a.pdf']) {
      const { response, body } = await download(emailId, part);
      assert.equal(response.status, 200, part);
      assert.equal(body.toString(), 'PDF-BYTES', part);
    }
  });
});

test('mail the parser gave up on part way lists and serves the attachments read before, never a 500', async () => {
  // The third part's header passes MailParser's 1 MiB limit: the email is stored with parseSuccess false.
  const hugeHeader = Array.from({ length: 17_000 }, (_, i) => `X-F${i}: ${'v'.repeat(60)}\r\n`).join('');
  const emailId = await deliver(
    multipart('From: sender@files.test\r\nSubject: Cut short\r\nContent-Type: multipart/mixed; boundary="B"\r\n', [
      'Content-Type: text/plain\r\n\r\nhello',
      pdf('first.pdf', 'FIRST-PDF'),
      `Content-Type: application/octet-stream; name="second.bin"\r\n${hugeHeader}\r\nSECOND`,
    ]),
  );
  const detail = await world.api.get(`/api/v2/mail/${emailId}`);
  assert.equal(detail.body.metadata.parseSuccess, false);
  assert.equal(detail.body.metadata.parseError, 'Max header size for a MIME node exceeded');
  const listed = await world.api.get(`/api/e2/attachments/${emailId}`);
  assert.equal(listed.status, 200);
  assert.deepEqual(
    listed.body.data.map((attachment: { id: string; filename: string }) => [attachment.id, attachment.filename]),
    [[id(0, 'FIRST-PDF'), 'first.pdf']],
  );
  for (const part of ['parts/0', `parts/${id(0, 'FIRST-PDF')}`, 'first.pdf']) {
    const { response, body } = await download(emailId, part);
    assert.equal(response.status, 200, part);
    assert.equal(body.toString(), 'FIRST-PDF', part);
  }
  const { response } = await download(emailId, 'parts/1');
  assert.equal(response.status, 404);
});

describe('attachment types', () => {
  const typed = (type: Buffer) =>
    Buffer.concat([
      Buffer.from('From: sender@files.test\r\nSubject: Typed\r\nContent-Type: multipart/mixed; boundary="B"\r\n\r\n'),
      Buffer.from('--B\r\nContent-Type: '),
      type,
      Buffer.from('\r\nContent-Disposition: attachment; filename="f.bin"\r\n\r\nDATA\r\n--B--\r\n'),
    ]);

  test('a type that is no valid header value is listed as sent and served as application/octet-stream', async () => {
    for (const [type, listed] of [
      ['application/x\x01y; name="f.bin"', 'application/x\x01y'],
      ['application/主题', 'application/主题'],
      ['=?utf-8?B?5Li76aKY?=/x', '=?utf-8?b?5li76aky?=/x'],
    ]) {
      const emailId = await deliver(typed(Buffer.from(type!)));
      const detail = await world.api.get(`/api/v2/mail/${emailId}`);
      assert.equal(detail.body.attachments[0].contentType, listed, type);
      const { response, body } = await download(emailId, 'parts/0');
      assert.equal(response.status, 200, type);
      assert.equal(body.toString(), 'DATA');
      assert.equal(response.headers.get('content-type'), 'application/octet-stream', type);
      assert.equal(response.headers.get('x-content-type-options'), 'nosniff', type);
    }
  });

  test('a valid type is served as sent, and never sniffed', async () => {
    const emailId = await deliver(typed(Buffer.from('text/html; charset=utf-8')));
    const { response } = await download(emailId, 'f.bin');
    assert.equal(response.status, 200);
    assert.equal(response.headers.get('content-type'), 'text/html');
    assert.equal(response.headers.get('x-content-type-options'), 'nosniff');
  });

  test('an empty Content-Type is listed and served like a missing one, not as "false"', async () => {
    const emailId = await deliver(typed(Buffer.alloc(0)));
    const detail = await world.api.get(`/api/v2/mail/${emailId}`);
    assert.equal(detail.body.attachments[0].contentType, 'application/octet-stream');
    const listed = await world.api.get(`/api/e2/attachments/${emailId}`);
    assert.equal(listed.body.data[0].contentType, 'application/octet-stream');
    const { response } = await download(emailId, 'parts/0');
    assert.equal(response.headers.get('content-type'), 'application/octet-stream');
  });
});
