import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { startSecondInstance, startTestApp, type TestApp } from '../helpers/app.ts';
import { type DnsServer, startDnsServer } from '../helpers/dns-server.ts';
import { createVerifiedDomain } from '../helpers/domains.ts';
import { type ApiClient, apiClient } from '../helpers/http.ts';
import { openSmtpConversation, type SmtpConversation } from '../helpers/smtp.ts';

/** Replies to one thread that arrive together, at two processes on one PostgreSQL schema (else at one process). */

let dns: DnsServer;
let first: TestApp;
let second: TestApp | undefined;
let api: ApiClient;

before(async () => {
  dns = await startDnsServer();
  first = await startTestApp({ DNS_SERVERS: dns.address });
  api = apiClient(first.baseUrl, first.apiKey);
  second = await startSecondInstance(first, { DNS_SERVERS: dns.address });
  const domain = await createVerifiedDomain(api, dns, 'replies.test');
  assert.equal(
    (await api.post('/api/v2/email-addresses', { address: 'in@replies.test', domainId: domain.id })).status,
    201,
  );
});
after(async () => {
  await second?.close();
  await first.close();
  await dns.close();
});

/** A conversation that has sent all of a message but the final dot, so that many can end at once. */
async function allButTheDot(port: number, headers: string): Promise<SmtpConversation> {
  const conversation = await openSmtpConversation(port);
  await conversation.command('EHLO sender.test');
  assert.match(await conversation.command('MAIL FROM:<ann@sender.test>'), /^250/);
  assert.match(await conversation.command('RCPT TO:<in@replies.test>'), /^250/);
  assert.match(await conversation.command('DATA'), /^354/);
  await conversation.write(`From: ann@sender.test\r\nTo: in@replies.test\r\n${headers}\r\n\r\nHello.\r\n`);
  return conversation;
}

async function endMessage(conversation: SmtpConversation): Promise<string> {
  await conversation.write('.\r\n');
  const reply = await conversation.reply();
  await conversation.quit();
  return reply;
}

test('replies to one thread stored at once are counted each, at positions 1 to N without repeats', async () => {
  for (let round = 0; round < 4; round++) {
    const root = `<root${round}@sender.test>`;
    const opened = await endMessage(
      await allButTheDot(first.smtpPort, `Subject: Plan ${round}\r\nMessage-ID: ${root}`),
    );
    assert.match(opened, /^250/);
    const replies = await Promise.all(
      Array.from({ length: 6 }, (_, n) =>
        allButTheDot(
          (n % 2 === 0 ? first : (second ?? first)).smtpPort,
          `Subject: Re: Plan ${round}\r\nMessage-ID: <reply${round}.${n}@sender.test>\r\nIn-Reply-To: ${root}\r\nReferences: ${root}`,
        ),
      ),
    );
    for (const reply of await Promise.all(replies.map(endMessage))) assert.match(reply, /^250/);
    const threads = await api.get('/api/e2/mail/threads?limit=100');
    const thread = threads.body.threads.find((t: { root_message_id: string }) => t.root_message_id === root);
    assert.equal(thread.message_count, 7, `round ${round}`);
    const detail = await api.get(`/api/e2/mail/threads/${thread.id}`);
    assert.deepEqual(
      detail.body.messages.map((message: { thread_position: number }) => message.thread_position).sort(),
      [1, 2, 3, 4, 5, 6, 7],
      `round ${round}`,
    );
  }
});

test('one message delivered to both processes at once (a sender retrying elsewhere) is stored once', async () => {
  for (let round = 0; round < 4; round++) {
    const copy = `Subject: Invoice ${round}\r\nMessage-ID: <invoice${round}@sender.test>`;
    const copies = await Promise.all([
      allButTheDot(first.smtpPort, copy),
      allButTheDot((second ?? first).smtpPort, copy),
    ]);
    const replies = await Promise.all(copies.map(endMessage));
    const ids = replies.map((reply) => /queued as (\S+)/.exec(reply)?.[1]);
    assert.equal(ids[0], ids[1], JSON.stringify(replies));
    const stored = await api.get('/api/v2/mail?limit=100');
    assert.deepEqual(
      stored.body.emails
        .filter((email: { subject: string }) => email.subject === `Invoice ${round}`)
        .map((email: { id: string }) => email.id),
      [ids[0]],
    );
  }
});
