import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { startTestApp, type TestApp } from '../helpers/app.ts';
import { type DnsServer, startDnsServer } from '../helpers/dns-server.ts';
import { createVerifiedDomain } from '../helpers/domains.ts';
import { type ApiClient, apiClient } from '../helpers/http.ts';
import { openSmtpConversation } from '../helpers/smtp.ts';
import { createAddress } from './mail-setup.ts';

/**
 * What a sending MTA on the Internet (Postfix, Exim, Gmail's outbound, a person with telnet) may send, as RFC 5321
 * and its extensions allow it, over a real socket; each stored message is read back through the API.
 */

let dns: DnsServer;
let server: TestApp;
let api: ApiClient;

before(async () => {
  dns = await startDnsServer();
  server = await startTestApp({ DNS_SERVERS: dns.address });
  api = apiClient(server.baseUrl, server.apiKey);
  const { id: domainId } = await createVerifiedDomain(api, dns, 'mta.test');
  await createAddress(api, 'inbox@mta.test', domainId);
  await createAddress(api, 'jörg@mta.test', domainId);
  const idn = await createVerifiedDomain(api, dns, 'bücher.test');
  await createAddress(api, 'post@bücher.test', idn.id);
});
after(async () => {
  await server.close();
  await dns.close();
});

/** Sends `data` (already dot-stuffed, ending with the lone dot) after `commands`, and returns the replies. */
async function transaction(commands: string[], data: string): Promise<{ replies: string[]; id: string }> {
  const smtp = await openSmtpConversation(server.smtpPort);
  const replies: string[] = [];
  for (const command of commands) replies.push(await smtp.command(command));
  replies.push(await smtp.command('DATA'));
  await smtp.write(data);
  const queued = await smtp.reply();
  replies.push(queued);
  await smtp.quit();
  return { replies, id: /queued as (email_\w+)/.exec(queued)?.[1] ?? '' };
}

describe('SMTP as a sending MTA meets it', () => {
  test('RCPT TO:<postmaster> without a domain is accepted in any case and stored for the operator account', async () => {
    const { replies, id } = await transaction(
      ['EHLO client.test', 'MAIL FROM:<>', 'RCPT TO:<PostMaster>'],
      'Subject: to the postmaster\r\n\r\nhello\r\n.\r\n',
    );
    assert.deepEqual(replies.slice(0, 4), [
      replies[0],
      '250 2.1.0 Accepted',
      '250 2.1.5 Accepted',
      '354 End data with <CR><LF>.<CR><LF>',
    ]);
    assert.match(replies[4]!, /^250 2\.6\.0 Ok: queued as email_\w+$/);
    const stored = await api.get(`/api/v2/mail/${id}`);
    assert.equal(stored.status, 200, JSON.stringify(stored.body));
    assert.equal(stored.body.recipient, 'postmaster');
    assert.equal(stored.body.subject, 'to the postmaster');
    const explained = await api.post('/api/v2/routing/explain', { recipient: 'Postmaster' });
    assert.deepEqual(
      { ...explained.body, rules: undefined },
      {
        recipient: 'postmaster',
        accepted: true,
        rejection: null,
        matchedBy: 'postmaster',
        domainId: null,
        addressId: null,
        rules: undefined,
        blocked: false,
        blocklistEntry: null,
        tags: [],
        target: null,
      },
    );
    // Another account of the installation does not see it.
    const other = apiClient(server.baseUrl, await server.newAccountKey('tenant'));
    assert.equal((await other.get(`/api/v2/mail/${id}`)).status, 404);
    assert.equal((await other.post('/api/v2/routing/explain', { recipient: 'postmaster' })).status, 404);
  });

  test('MAIL and RCPT parameters of extensions EHLO announced are accepted; DSN and unknown ones get 555 5.5.4', async () => {
    const smtp = await openSmtpConversation(server.smtpPort);
    await smtp.command('EHLO client.test');
    // What Postfix sends to a server announcing SIZE, 8BITMIME and SMTPUTF8 but not DSN.
    assert.equal(
      await smtp.command('MAIL FROM:<a@sender.test> SIZE=1000 BODY=8BITMIME SMTPUTF8'),
      '250 2.1.0 Accepted',
    );
    assert.equal(await smtp.command('RCPT TO:<inbox@mta.test>'), '250 2.1.5 Accepted');
    // RFC 3461: NOTIFY and ORCPT only to a server that announced DSN; RFC 5321 §4.1.1.11 answers others with 555.
    assert.equal(
      await smtp.command('RCPT TO:<inbox@mta.test> NOTIFY=SUCCESS,FAILURE ORCPT=rfc822;inbox@mta.test'),
      '555 5.5.4 Unsupported parameter NOTIFY',
    );
    assert.equal(await smtp.command('RCPT TO:<inbox@mta.test> X-TRACE=1'), '555 5.5.4 Unsupported parameter X-TRACE');
    assert.equal(await smtp.command('RSET'), '250 2.0.0 Flushed');
    assert.equal(
      await smtp.command('MAIL FROM:<a@sender.test> RET=HDRS ENVID=QQ314159'),
      '555 5.5.4 Unsupported parameter RET',
    );
    assert.equal(await smtp.command('MAIL FROM:<a@sender.test> AUTH=<>'), '555 5.5.4 Unsupported parameter AUTH');
    assert.equal(await smtp.command('MAIL FROM:<a@sender.test> SIZE=10 !x=1'), '501 5.5.4 Bad parameter syntax');
    // None of them counted as a refused recipient, and the session goes on.
    assert.equal(await smtp.command('MAIL FROM:<a@sender.test> BODY=7BIT'), '250 2.1.0 Accepted');
    assert.equal(await smtp.command('RCPT TO:<inbox@mta.test>'), '250 2.1.5 Accepted');
    await smtp.quit();
  });

  test('a non-ASCII local part without SMTPUTF8 gets 553 5.6.7; with it, it is routed ignoring case and stored as sent', async () => {
    const refused = '553 5.6.7 Must declare SMTPUTF8 to send unicode address';
    const smtp = await openSmtpConversation(server.smtpPort);
    await smtp.command('EHLO client.test');
    assert.equal(await smtp.command('MAIL FROM:<jörg@sender.test>'), refused);
    assert.equal(await smtp.command('MAIL FROM:<a@sender.test>'), '250 2.1.0 Accepted');
    assert.equal(await smtp.command('RCPT TO:<jörg@mta.test>'), refused);
    // A domain in its ASCII form needs no SMTPUTF8, whatever it spells.
    assert.equal(await smtp.command('RCPT TO:<post@xn--bcher-kva.test>'), '250 2.1.5 Accepted');
    assert.equal(await smtp.command('RSET'), '250 2.0.0 Flushed');
    await smtp.quit();
    // After HELO no extension was announced, so SMTPUTF8 is as unknown as any parameter (RFC 5321 §4.1.1.1).
    const old = await openSmtpConversation(server.smtpPort);
    await old.command('HELO old.client.test');
    assert.equal(await old.command('MAIL FROM:<a@sender.test> SMTPUTF8'), '555 5.5.4 Unsupported parameter SMTPUTF8');
    await old.quit();

    const { replies, id } = await transaction(
      ['EHLO client.test', 'MAIL FROM:<Jörg@Sender.test> SMTPUTF8', 'RCPT TO:<JÖRG@mta.test>'],
      'From: Jörg <Jörg@Sender.test>\r\nTo: JÖRG@mta.test\r\nSubject: Grüße\r\n\r\nx\r\n.\r\n',
    );
    assert.deepEqual(replies.slice(1, 3), ['250 2.1.0 Accepted', '250 2.1.5 Accepted']);
    const read = await api.get(`/api/v2/mail/${id}`);
    assert.equal(read.status, 200);
    assert.deepEqual(
      [read.body.recipient, read.body.from, read.body.fromName, read.body.to, read.body.subject],
      ['jörg@mta.test', 'jörg@sender.test', 'Jörg', 'JÖRG@mta.test', 'Grüße'],
    );
  });

  test('the stored Received: header says "with" SMTP after HELO, ESMTP after EHLO, UTF8SMTP with SMTPUTF8', async () => {
    const sessions: Array<[string[], string]> = [
      [['HELO old.client.test', 'MAIL FROM:<a@sender.test>'], 'SMTP'],
      [['EHLO client.test', 'MAIL FROM:<a@sender.test> BODY=8BITMIME'], 'ESMTP'],
      [['EHLO client.test', 'MAIL FROM:<δοκιμή@sender.test> SMTPUTF8'], 'UTF8SMTP'],
    ];
    for (const [commands, protocol] of sessions) {
      // Each its own subject: the same bytes again would be stored once, as a sender's retry.
      const data = `Subject: traced ${protocol}\r\n\r\nx\r\n.\r\n`;
      const { id } = await transaction([...commands, 'RCPT TO:<inbox@mta.test>'], data);
      const raw = await api.get(`/api/v2/mail/${id}/raw`);
      assert.equal(raw.status, 200);
      const helo = commands[0]!.split(' ')[1]!.replace(/\./g, '\\.');
      assert.match(
        raw.body,
        new RegExp(
          `^Return-Path: <${commands[1]!.slice(11, commands[1]!.indexOf('>'))}>\r\n` +
            `Received: from ${helo} \\(\\[127\\.0\\.0\\.1\\]\\)\r\n\tby mx\\.mailroom\\.test \\(Mailroom\\) with ${protocol} ` +
            `id msg_\\w{26}\r\n\tfor <inbox@mta\\.test>;\r\n\t\\w{3}, \\d\\d \\w{3} \\d{4} \\d\\d:\\d\\d:\\d\\d \\+0000\r\n` +
            `Subject: traced ${protocol}\r\n\r\nx\r\n$`,
        ),
      );
    }
  });

  test('final delivery puts Return-Path: first: the reverse-path as given, <> for a bounce, a source route dropped', async () => {
    const senders: Array<[string, string]> = [
      ['MAIL FROM:<>', '<>'],
      ['MAIL FROM:<@relay.example,@hop.example:Bounce+123@Sender.Test> BODY=8BITMIME', '<Bounce+123@Sender.Test>'],
    ];
    for (const [mailFrom, returnPath] of senders) {
      const { replies, id } = await transaction(
        ['EHLO client.test', mailFrom, 'RCPT TO:<@relay.example:inbox@mta.test>'],
        `Subject: returned ${returnPath}\r\n\r\nx\r\n.\r\n`,
      );
      assert.deepEqual(replies.slice(1, 3), ['250 2.1.0 Accepted', '250 2.1.5 Accepted']);
      const raw = await api.get(`/api/v2/mail/${id}/raw`);
      assert.equal(raw.body.split('\r\n')[0], `Return-Path: ${returnPath}`);
      assert.match(raw.body.split('\r\n')[1], /^Received: from client\.test /);
      // The parsed message is what the sender sent: no trace header among its headers.
      const read = await api.get(`/api/v2/mail/${id}`);
      assert.deepEqual(Object.keys(read.body.content.headers), ['subject']);
    }
  });

  test('postmaster@ is accepted even when its address is switched off, and stored without a delivery', async () => {
    const domain = await createVerifiedDomain(api, dns, 'quiet.test');
    await createAddress(api, 'postmaster@quiet.test', domain.id, { isActive: false });
    const { replies, id } = await transaction(
      ['EHLO client.test', 'MAIL FROM:<>', 'RCPT TO:<Postmaster@quiet.test>'],
      'Subject: abuse report\r\n\r\nx\r\n.\r\n',
    );
    assert.equal(replies[2], '250 2.1.5 Accepted');
    const stored = await api.get(`/api/v2/mail/${id}`);
    assert.equal(stored.body.recipient, 'postmaster@quiet.test');
    const explained = await api.post('/api/v2/routing/explain', { recipient: 'postmaster@quiet.test' });
    assert.deepEqual(
      [explained.body.matchedBy, explained.body.addressId, explained.body.target],
      ['postmaster', null, null],
    );
  });

  test('DATA keeps lines over 1000 octets, unstuffs dots, and ends only at CRLF . CRLF (not at a bare LF or CR)', async () => {
    const long = 'y'.repeat(5000);
    const { replies, id } = await transaction(
      ['EHLO client.test', 'MAIL FROM:<user@[IPv6:2001:db8::1]>', 'RCPT TO:<"inbox"@MTA.Test>'],
      `Subject: lines\r\n\r\n${long}\r\n..leading dot\r\nbare\n.\nlf\r\nbare\r.\r\ncr\r\n.\r\n`,
    );
    assert.deepEqual(replies.slice(1, 3), ['250 2.1.0 Accepted', '250 2.1.5 Accepted']);
    const raw = await api.get(`/api/v2/mail/${id}/raw`);
    assert.ok(raw.body.endsWith(`Subject: lines\r\n\r\n${long}\r\n.leading dot\r\nbare\n.\nlf\r\nbare\r.\r\ncr\r\n`));
    assert.equal((await api.get(`/api/v2/mail/${id}`)).body.recipient, 'inbox@mta.test');
  });

  test('VRFY discloses nothing, EXPN is not offered, NOOP and HELP answer, RSET ends a transaction', async () => {
    const smtp = await openSmtpConversation(server.smtpPort);
    assert.equal(await smtp.command('HELO old.client.test'), '250 mx.mailroom.test Nice to meet you, [127.0.0.1]');
    const unknown = await smtp.command('VRFY nobody@mta.test');
    assert.equal(await smtp.command('VRFY inbox@mta.test'), unknown);
    assert.equal(unknown, '252 2.1.5 Try to send something. No promises though');
    assert.equal(await smtp.command('EXPN staff'), '500 5.5.2 Error: command not recognized');
    assert.equal(await smtp.command('NOOP'), '250 2.0.0 OK');
    assert.match(await smtp.command('HELP'), /^214 /);
    assert.equal(await smtp.command('MAIL FROM:<a@sender.test>'), '250 2.1.0 Accepted');
    assert.equal(await smtp.command('RCPT TO:<inbox@mta.test>'), '250 2.1.5 Accepted');
    assert.equal(await smtp.command('RSET'), '250 2.0.0 Flushed');
    assert.equal(await smtp.command('RCPT TO:<inbox@mta.test>'), '503 5.5.1 Error: need MAIL command');
    await smtp.quit();
  });

  test('a pipelined transaction (RFC 2920) gets one reply per command, in order, and is stored', async () => {
    const smtp = await openSmtpConversation(server.smtpPort);
    await smtp.command('EHLO client.test');
    await smtp.write(
      'MAIL FROM:<a@sender.test>\r\nRCPT TO:<nobody@mta.test>\r\nRCPT TO:<inbox@mta.test>\r\nRCPT TO:<postmaster>\r\nDATA\r\n',
    );
    const replies = [];
    for (let i = 0; i < 5; i++) replies.push(await smtp.reply());
    assert.deepEqual(replies, [
      '250 2.1.0 Accepted',
      '550 5.1.1 <nobody@mta.test>: Recipient address rejected: User unknown',
      '250 2.1.5 Accepted',
      '250 2.1.5 Accepted',
      '354 End data with <CR><LF>.<CR><LF>',
    ]);
    await smtp.write('Subject: piped\r\n\r\nx\r\n.\r\nQUIT\r\n');
    assert.match(await smtp.reply(), /^250 2\.6\.0 Ok: queued as email_\w+ email_\w+$/);
    assert.equal(await smtp.reply(), '221 2.0.0 Bye');
  });
});
