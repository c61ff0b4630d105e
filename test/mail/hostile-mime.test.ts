import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { type MailWorld, rawMessage, startMailWorld } from './setup.ts';

let world: MailWorld;

before(async () => {
  world = await startMailWorld(['hostile@inbox.test']);
});
after(() => world.close());

/** The e2 thread view of one stored email, which carries its Date header as `date`. */
async function threadMessage(emailId: string) {
  const detail = await world.api.get(`/api/e2/emails/${emailId}`);
  assert.equal(detail.status, 200);
  const thread = await world.api.get(`/api/e2/mail/threads/${detail.body.thread_id}`);
  assert.equal(thread.status, 200);
  return thread.body.messages.find((message: { id: string }) => message.id === emailId);
}

test('an unparsable Date header is stored as no date, not as the time the message was parsed', async () => {
  const headers = { From: 'a@sender.test', To: 'hostile@inbox.test', Subject: 'When?' };
  const [unreadable] = await world.deliver({
    to: 'hostile@inbox.test',
    raw: rawMessage({ ...headers, Date: 'garbage yesterday' }, 'body'),
  });
  const [readable] = await world.deliver({
    to: 'hostile@inbox.test',
    raw: rawMessage({ ...headers, Date: 'Thu, 5 Mar 2026 10:00:00 +0000' }, 'body'),
  });
  assert.equal((await threadMessage(unreadable!)).date, null);
  assert.equal((await threadMessage(readable!)).date, '2026-03-05T10:00:00.000Z');
});

test('a Date header in the year 99999 is stored as no date: GET /api/e2/mail/threads/{id} answers 200, not 500', async () => {
  const [id] = await world.deliver({
    to: 'hostile@inbox.test',
    raw: rawMessage(
      {
        From: 'a@sender.test',
        To: 'hostile@inbox.test',
        Subject: 'Far future',
        Date: 'Mon, 1 Jan 99999 00:00:00 +0000',
      },
      'body',
    ),
  });
  assert.equal((await threadMessage(id!)).date, null);
});

test('a row stored before that fix with a date in the year 99999 reads as no date, and its thread answers 200', async () => {
  const [id] = await world.deliver({
    to: 'hostile@inbox.test',
    raw: rawMessage({ From: 'a@sender.test', To: 'hostile@inbox.test', Subject: 'Old far future' }, 'body'),
  });
  await world.server.app.database.db
    .updateTable('emails')
    .set({ sent_date: '+099999-01-01T00:00:00.000Z' })
    .where('id', '=', id!)
    .execute();
  assert.equal((await threadMessage(id!)).date, null);
});

test('a message whose parts pass 1 MB of headers together is stored unparsed, with the parts before it', async () => {
  // Each part's header is under MailParser's own limit of 1 MB a part; together they pass it.
  const padding = `X-Padding: ${'p'.repeat(70)}${`\r\n ${'p'.repeat(70)}`.repeat(8_000)}`;
  const parts = [
    'Content-Type: text/plain\r\n\r\nHello',
    'Content-Type: application/octet-stream\r\nContent-Disposition: attachment; filename="first.bin"\r\n\r\nfirst',
    `Content-Type: application/octet-stream\r\n${padding}\r\n\r\nsecond`,
    `Content-Type: application/octet-stream\r\n${padding}\r\n\r\nthird`,
  ];
  const body = `${parts.map((part) => `--b\r\n${part}\r\n`).join('')}--b--\r\n`;
  const [id] = await world.deliver({
    to: 'hostile@inbox.test',
    raw: rawMessage(
      {
        From: 'a@sender.test',
        To: 'hostile@inbox.test',
        Subject: 'Padded',
        'Content-Type': 'multipart/mixed; boundary=b',
      },
      body,
    ),
  });
  const detail = await world.api.get(`/api/v2/mail/${id}`);
  assert.equal(detail.status, 200);
  assert.equal(detail.body.subject, 'Padded');
  assert.equal(detail.body.metadata.parseSuccess, false);
  assert.equal(detail.body.metadata.parseError, "The headers of the message's MIME parts pass 1048576 bytes together");
  const listed = await world.api.get(`/api/e2/attachments/${id}`);
  assert.deepEqual(
    listed.body.data.map((attachment: { filename: string; size: number }) => [attachment.filename, attachment.size]),
    [
      ['first.bin', 5],
      [null, 6],
    ],
  );
  const download = await fetch(`${world.server.baseUrl}/api/e2/attachments/${id}/parts/0`, {
    headers: { authorization: `Bearer ${world.server.apiKey}` },
  });
  assert.equal(download.status, 200);
  assert.equal(await download.text(), 'first');
});

test('an attachment name with a lone surrogate (UTF-16 encoded word) downloads with U+FFFD in its name, not a 500', async () => {
  const name = `=?utf-16le?b?${Buffer.from([0x00, 0xd8, 0x41, 0x00]).toString('base64')}?=`;
  const [id] = await world.deliver({
    to: 'hostile@inbox.test',
    raw: rawMessage(
      {
        From: 'a@sender.test',
        To: 'hostile@inbox.test',
        Subject: 'Surrogate',
        'Content-Type': 'multipart/mixed; boundary=b',
      },
      `--b\r\nContent-Type: application/octet-stream\r\nContent-Disposition: attachment; filename="${name}"\r\n\r\nfile\r\n--b--\r\n`,
    ),
  });
  const listed = await world.api.get(`/api/e2/attachments/${id}`);
  assert.equal(listed.body.data[0].filename, '\ud800A');
  const download = await fetch(`${world.server.baseUrl}/api/e2/attachments/${id}/parts/0`, {
    headers: { authorization: `Bearer ${world.server.apiKey}` },
  });
  assert.equal(download.status, 200);
  assert.equal(download.headers.get('content-disposition'), `attachment; filename="_A"; filename*=UTF-8''%EF%BF%BDA`);
  assert.equal(await download.text(), 'file');
});

test('HTML of 30,000 nested tags is sanitized up to its 20,000th start tag; the raw message keeps all of it', async () => {
  const html = `<p>top</p>${'<b>'.repeat(29_999)}bottom`;
  const [id] = await world.deliver({
    to: 'hostile@inbox.test',
    raw: rawMessage(
      { From: 'a@sender.test', To: 'hostile@inbox.test', Subject: 'Deep', 'Content-Type': 'text/html' },
      html,
    ),
  });
  const detail = await world.api.get(`/api/v2/mail/${id}`);
  assert.equal(detail.status, 200);
  const cleaned: string = detail.body.content.htmlBody;
  assert.equal(cleaned.match(/<b>/g)?.length, 19_999);
  assert.ok(cleaned.startsWith('<p>top</p><b>'), cleaned.slice(0, 40));
  assert.ok(!cleaned.includes('bottom'));
  assert.equal(detail.body.content.rawContent.split('<b>').length - 1, 29_999);
});
