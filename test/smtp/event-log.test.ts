import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { type MailroomProcess, startMailroom } from '../delivery/processes.ts';
import { createWebhookEndpoint, routeAddress } from '../delivery/setup.ts';
import { type DnsServer, startDnsServer } from '../helpers/dns-server.ts';
import { createVerifiedDomain } from '../helpers/domains.ts';
import { createInstallation } from '../helpers/process.ts';
import { openSmtpConversation } from '../helpers/smtp.ts';
import { startWebhookReceiver, type WebhookReceiver } from '../helpers/webhook-receiver.ts';

const API_KEY = `mr_test_${randomBytes(16).toString('hex')}`;
const BODY_TEXT = 'a body that must never reach the log';

let dns: DnsServer;
let receiver: WebhookReceiver;
let installation: Awaited<ReturnType<typeof createInstallation>>;
let mailroom: MailroomProcess;

before(async () => {
  dns = await startDnsServer();
  receiver = await startWebhookReceiver();
  // debug shows more than info, never less: the event lines are info and must be there.
  installation = await createInstallation({
    MAILROOM_API_KEY: API_KEY,
    DNS_SERVERS: dns.address,
    DELIVERY_RETRY_SCALE: '0.001',
    LOG_LEVEL: 'debug',
  });
  mailroom = await startMailroom(installation.env, API_KEY);
});
after(async () => {
  await mailroom?.stop();
  await installation?.remove();
  await receiver.close();
  await dns.close();
});

/** The pino lines the process printed with this message, without pino's own members. */
function logged(msg: string): Array<Record<string, unknown>> {
  return mailroom
    .stdout()
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as Record<string, unknown>)
    .filter((line) => line.msg === msg)
    .map(({ level, time, msg: _msg, ...fields }) => {
      assert.equal(level, 30, `${msg} is logged at info`);
      assert.equal(typeof time, 'string');
      return fields;
    });
}

async function waitForLines(msg: string, count: number) {
  for (let attempt = 0; attempt < 100; attempt++) {
    if (logged(msg).length >= count) return logged(msg);
    await sleep(100);
  }
  assert.fail(`expected ${count} "${msg}" lines in:\n${mailroom.stdout()}`);
}

test('each event a user cares about is one info line with structured fields, never the body', async () => {
  receiver.answer({ status: 500 }, { status: 200 });
  const domain = await createVerifiedDomain(mailroom.api, dns, 'events.test');
  assert.deepEqual(logged('domain status changed'), [
    { domainId: domain.id, domain: 'events.test', from: 'pending', to: 'verified' },
  ]);
  assert.equal((await mailroom.api.post('/api/v2/domains', { domain: 'waiting.test' })).status, 201);
  const endpoint = await createWebhookEndpoint(mailroom.api, 'Receiver', { url: receiver.url, retryAttempts: 3 });
  await routeAddress(mailroom.api, 'inbox@events.test', domain.id, { endpointId: endpoint.id });
  const off = await mailroom.api.post('/api/v2/email-addresses', {
    address: 'off@events.test',
    domainId: domain.id,
    isActive: false,
  });
  assert.equal(off.status, 201, JSON.stringify(off.body));

  const smtp = await openSmtpConversation(mailroom.smtpPort);
  await smtp.command('EHLO client.test');
  assert.match(await smtp.command('MAIL FROM:<sender@client.test>'), /^250/);
  for (const recipient of ['a@elsewhere.test', 'a@waiting.test', 'nobody@events.test', 'off@events.test']) {
    assert.match(await smtp.command(`RCPT TO:<${recipient}>`), /^550/);
  }
  assert.match(await smtp.command('RCPT TO:<inbox@events.test>'), /^250/);
  assert.match(await smtp.command('DATA'), /^354/);
  const message = `From: sender@client.test\r\nTo: inbox@events.test\r\nSubject: Logged\r\nMessage-ID: <logged@client.test>\r\n\r\n${BODY_TEXT}\r\n.\r\n`;
  await smtp.write(message);
  const queued = await smtp.reply();
  assert.match(queued, /^250 .*Ok: queued as email_/);
  await smtp.quit();
  const emailId = queued.split(' ').pop();

  const envelope = { clientIp: '127.0.0.1', mailFrom: 'sender@client.test' };
  assert.deepEqual(logged('recipient refused'), [
    { ...envelope, recipient: 'a@elsewhere.test', reason: 'unknown_domain' },
    { ...envelope, recipient: 'a@waiting.test', reason: 'unverified_domain' },
    { ...envelope, recipient: 'nobody@events.test', reason: 'unknown_address' },
    { ...envelope, recipient: 'off@events.test', reason: 'inactive_address' },
  ]);
  assert.deepEqual(logged('recipient accepted'), [
    { ...envelope, recipient: 'inbox@events.test', matchedBy: 'address' },
  ]);
  const [stored] = await waitForLines('message stored', 1);
  assert.match(String(stored!.queueId), /^msg_/);
  assert.equal(typeof stored!.size, 'number');
  assert.ok((stored!.size as number) > message.length - 5, 'the stored size counts the whole raw message');
  assert.deepEqual(
    { ...stored, queueId: 'q', size: 0 },
    {
      queueId: 'q',
      emailIds: [emailId],
      duplicateIds: [],
      size: 0,
      recipients: ['inbox@events.test'],
      messageId: '<logged@client.test>',
    },
  );

  const attempts = await waitForLines('delivery attempt', 2);
  const deliveryId = attempts[0]!.deliveryId;
  assert.match(String(deliveryId), /^dlv_/);
  for (const attempt of attempts) assert.equal(typeof attempt.durationMs, 'number');
  const [failed, succeeded] = attempts.map((attempt): Record<string, unknown> => ({ ...attempt, durationMs: 0 }));
  assert.match(String(failed!.nextAttemptAt), /^\d{4}-\d\d-\d\dT/);
  const common = { deliveryId, emailId, endpointId: endpoint.id, endpointType: 'webhook', durationMs: 0 };
  assert.deepEqual(failed, {
    ...common,
    status: 'retry',
    statusCode: 500,
    nextAttemptAt: failed!.nextAttemptAt,
    error: 'HTTP 500',
  });
  assert.deepEqual(succeeded, { ...common, status: 'success', statusCode: 200, nextAttemptAt: null, error: null });
  assert.ok(!mailroom.stdout().includes(BODY_TEXT), 'no message body in the log');
});
