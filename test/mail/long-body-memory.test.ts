import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, test } from 'node:test';
import { type MailroomProcess, startMailroom } from '../delivery/processes.ts';
import { type DnsServer, startDnsServer } from '../helpers/dns-server.ts';
import { createVerifiedDomain } from '../helpers/domains.ts';
import { createInstallation } from '../helpers/process.ts';
import { sendMail } from '../helpers/smtp.ts';
import { rawMessage } from './setup.ts';

const API_KEY = `mr_test_${randomBytes(16).toString('hex')}`;

let dns: DnsServer;
let installation: Awaited<ReturnType<typeof createInstallation>>;
let mailroom: MailroomProcess;

before(async () => {
  dns = await startDnsServer();
  // Parsing the message below needs some 250 MB of heap now; MailParser alone held 1.2 GB for it before.
  installation = await createInstallation({
    MAILROOM_API_KEY: API_KEY,
    DNS_SERVERS: dns.address,
    INGEST_WORKERS: '1',
    NODE_OPTIONS: '--max-old-space-size=400',
  });
  mailroom = await startMailroom(installation.env, API_KEY);
  const domain = await createVerifiedDomain(mailroom.api, dns, 'lines.test');
  const address = await mailroom.api.post('/api/v2/email-addresses', {
    address: 'log@lines.test',
    domainId: domain.id,
  });
  assert.equal(address.status, 201);
});
after(async () => {
  await mailroom?.stop();
  await installation?.remove();
  await dns?.close();
});

test('30 MB of short text lines are stored cut to 5 million characters within a 400 MB heap', async () => {
  const raw = rawMessage({ From: 'a@sender.test', To: 'log@lines.test', Subject: 'Lines' }, 'a\n'.repeat(10_000_000));
  const sent = await sendMail({ port: mailroom.smtpPort, from: 'a@sender.test', to: 'log@lines.test', raw });
  assert.equal(sent.code, 250, sent.response);
  const detail = await mailroom.api.get(`/api/v2/mail/${sent.queuedIds[0]}`);
  assert.equal(detail.status, 200);
  assert.equal(detail.body.textBody, 'a\n'.repeat(2_500_000));
});
