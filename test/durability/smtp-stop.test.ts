import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { type MailroomProcess, startMailroom } from '../delivery/processes.ts';
import { type DnsServer, startDnsServer } from '../helpers/dns-server.ts';
import { createVerifiedDomain } from '../helpers/domains.ts';
import { createInstallation } from '../helpers/process.ts';
import { openSmtpConversation } from '../helpers/smtp.ts';
import { createAddress } from '../smtp/mail-setup.ts';

const API_KEY = 'mr_test_smtp_stop_0123456789abcdef';
let dns: DnsServer;
let installation: Awaited<ReturnType<typeof createInstallation>>;
let server: MailroomProcess;

before(async () => {
  dns = await startDnsServer();
  installation = await createInstallation({ MAILROOM_API_KEY: API_KEY, DNS_SERVERS: dns.address });
  server = await startMailroom(installation.env, API_KEY);
  const domain = await createVerifiedDomain(server.api, dns, 'stop.test');
  await createAddress(server.api, 'inbox@stop.test', domain.id);
});
after(async () => {
  await server?.stop('SIGKILL');
  await installation?.remove();
  await dns?.close();
});

test('SIGTERM: sessions without a transaction get 421 at once; one in the middle of DATA finishes with 250, then gets 421; the process exits 0 and the message is kept', async () => {
  const idle = await openSmtpConversation(server.smtpPort);
  assert.match(await idle.command('EHLO idle.test'), /^250/);
  const between = await openSmtpConversation(server.smtpPort);
  await between.command('EHLO between.test');
  await between.command('MAIL FROM:<a@sender.test>');
  assert.match(await between.command('RSET'), /^250/);
  const busy = await openSmtpConversation(server.smtpPort);
  await busy.command('EHLO busy.test');
  await busy.command('MAIL FROM:<ann@sender.test>');
  assert.match(await busy.command('RCPT TO:<inbox@stop.test>'), /^250/);
  assert.match(await busy.command('DATA'), /^354/);
  await busy.write('Message-ID: <mid-stop@sender.test>\r\nSubject: Across the stop\r\n\r\nthe first half');

  const exited = server.stop('SIGTERM');
  // Both answers come while the message is still half sent: neither waits for the grace given to transactions.
  assert.equal(await idle.reply(), '421 4.3.2 Server shutting down');
  assert.equal(await between.reply(), '421 4.3.2 Server shutting down');
  await Promise.all([idle.closed, between.closed]);
  await busy.write(' and the second\r\n.\r\n');
  assert.match(await busy.reply(), /^250 2\.6\.0 Ok: queued as email_\w+$/);
  assert.equal(await busy.reply(), '421 4.3.2 Server shutting down');
  await busy.closed;
  assert.equal(await exited, 0);

  server = await startMailroom(installation.env, API_KEY);
  const list = await server.api.get('/api/v2/mail?limit=10');
  assert.deepEqual(
    list.body.emails.map((email: { subject: string }) => email.subject),
    ['Across the stop'],
  );
  assert.equal(await server.stop('SIGTERM'), 0);
});

test('SIGTERM during a domain verification pass longer than SHUTDOWN_TIMEOUT_SECONDS (lame DNS for pending domains): SMTP closes at once and the process exits 0 after the domain being checked', async () => {
  await server.stop('SIGKILL');
  const stopEnv = { ...installation.env, DOMAIN_VERIFY_INTERVAL_SECONDS: '1', SHUTDOWN_TIMEOUT_SECONDS: '20' };
  server = await startMailroom(stopEnv, API_KEY);
  for (let i = 1; i <= 20; i++) {
    const created = await server.api.post('/api/v2/domains', { domain: `lame${i}.test` });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    // Each check waits out the resolver's timeouts: a pass over twenty of them takes longer than the stop may.
    dns.slow(`lame${i}.test`, 60_000);
  }
  await dns.asked('lame2.test');

  const busy = await openSmtpConversation(server.smtpPort);
  await busy.command('EHLO busy.test');
  await busy.command('MAIL FROM:<ann@sender.test>');
  assert.match(await busy.command('RCPT TO:<inbox@stop.test>'), /^250/);
  assert.match(await busy.command('DATA'), /^354/);
  await busy.write('Subject: During the pass\r\n\r\nthe first half');
  const idle = await openSmtpConversation(server.smtpPort);
  await idle.command('EHLO idle.test');

  const exited = server.stop('SIGTERM');
  assert.equal(await idle.reply(), '421 4.3.2 Server shutting down');
  await busy.write(' and the second\r\n.\r\n');
  assert.match(await busy.reply(), /^250 2\.6\.0 Ok: queued as email_\w+$/);
  assert.equal(await busy.reply(), '421 4.3.2 Server shutting down');
  assert.equal(await exited, 0);
  for (let i = 1; i <= 20; i++) dns.slow(`lame${i}.test`, 0);
});
