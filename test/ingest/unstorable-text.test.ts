import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { TestApp } from '../helpers/app.ts';
import { type DnsServer, startDnsServer } from '../helpers/dns-server.ts';
import { sendMail } from '../helpers/smtp.ts';
import { startReceivingApp } from '../smtp/mail-setup.ts';

const ADDRESS = 'store@odd-text.test';
let dns: DnsServer;
let server: TestApp;

before(async () => {
  dns = await startDnsServer();
  server = await startReceivingApp(dns, ADDRESS);
});
after(async () => {
  await server.close();
  await dns.close();
});

async function send(raw: string) {
  const sent = await sendMail({ port: server.smtpPort, to: ADDRESS, raw: Buffer.from(raw, 'latin1') });
  assert.equal(sent.response.slice(0, 10), '250 2.6.0 ', sent.response);
  return server.app.database.db
    .selectFrom('emails')
    .select(['subject', 'from_name', 'message_id', 'in_reply_to', 'references_json', 'text_body', 'headers_json'])
    .where('id', '=', sent.queuedIds[0]!)
    .executeTakeFirstOrThrow();
}

test('SMTP DATA: NUL characters in the subject, a name, a header and the body are stored as U+FFFD, not refused with 451', async () => {
  // PostgreSQL's text cannot hold U+0000: the row was refused and the message answered 451 on every retry.
  const row = await send(
    'From: =?utf-8?Q?Ann=00Lee?= <ann@sender.test>\r\nSubject: =?utf-8?Q?a=00b?=\r\nX-Odd: c\x00d\r\n' +
      'Message-ID: <nul@sender.test>\r\nContent-Transfer-Encoding: quoted-printable\r\n\r\none=00two\x00three\r\n',
  );
  assert.deepEqual(
    {
      subject: row.subject,
      fromName: row.from_name,
      text: row.text_body,
      odd: JSON.parse(row.headers_json ?? '{}')['x-odd'],
    },
    { subject: 'a\ufffdb', fromName: 'Ann\ufffdLee', text: 'one\ufffdtwo\ufffdthree\n', odd: 'c\ufffdd' },
  );
});

test('SMTP DATA: a Message-ID longer than a header line may be is stored as none, not refused with 451', async () => {
  // PostgreSQL refuses an index entry past some 2,700 bytes, and message_id is indexed.
  const long = `<${'x'.repeat(1000)}@sender.test>`;
  const row = await send(
    `Subject: long ids\r\nMessage-ID: ${long}\r\nIn-Reply-To: ${long}\r\n` +
      `References: <first@sender.test> ${long}\r\n\r\nbody\r\n`,
  );
  assert.deepEqual(
    { messageId: row.message_id, inReplyTo: row.in_reply_to, references: JSON.parse(row.references_json ?? 'null') },
    { messageId: null, inReplyTo: null, references: ['<first@sender.test>'] },
  );
});

test('SMTP DATA: a Message-ID of 998 bytes, the longest a line holds, is kept', async () => {
  const id = `<${'y'.repeat(984)}@sender.test>`;
  assert.equal(id.length, 998);
  const row = await send(`Subject: longest id\r\nMessage-ID: ${id}\r\n\r\nbody\r\n`);
  assert.equal(row.message_id, id);
});

test('SMTP DATA: a 700 KB Subject of distinct words is stored, and its first 20,000 characters searched', async () => {
  // On PostgreSQL its search vector passed the 1 MB a tsvector holds: the row was refused, 451 on every retry.
  const words = Array.from({ length: 100_000 }, (_, index) => `w${index}`);
  const folded = Array.from({ length: 1_000 }, (_, line) => words.slice(line * 100, line * 100 + 100).join(' '));
  const row = await send(`Subject: ${folded.join('\r\n ')}\r\nMessage-ID: <words@sender.test>\r\n\r\nbody\r\n`);
  assert.equal(row.subject?.length, words.join(' ').length);
  const found = async (word: string) => {
    const response = await fetch(`${server.baseUrl}/api/v2/mail?search=${encodeURIComponent(`subject:${word}`)}`, {
      headers: { authorization: `Bearer ${server.apiKey}` },
    });
    return (await response.json()).pagination.total;
  };
  // w3517 ends at character 19,997; w3518 is cut to w3 and w3519 starts at character 20,005.
  const searched = ['w3517', 'w3519', 'w99999'];
  assert.deepEqual(await Promise.all(searched.map(found)), [1, 0, 0]);
});
