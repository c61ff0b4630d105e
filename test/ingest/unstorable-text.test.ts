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
