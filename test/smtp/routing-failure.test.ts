import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { sql } from 'kysely';
import { startTestApp, type TestApp } from '../helpers/app.ts';
import { type DnsServer, startDnsServer } from '../helpers/dns-server.ts';
import { createVerifiedDomain } from '../helpers/domains.ts';
import { apiClient } from '../helpers/http.ts';
import { openSmtpConversation } from '../helpers/smtp.ts';
import { createAddress } from './mail-setup.ts';

let dns: DnsServer;
let server: TestApp;

before(async () => {
  dns = await startDnsServer();
  server = await startTestApp({ DNS_SERVERS: dns.address });
  const api = apiClient(server.baseUrl, server.apiKey);
  const { id: domainId } = await createVerifiedDomain(api, dns, 'routing-failure.test');
  await createAddress(api, 'inbox@routing-failure.test', domainId);
});
after(async () => {
  // The one failure this file makes on purpose is logged as the bug it would be; anything else fails the file.
  const logged = server.loggedErrors().map((line) => JSON.parse(line).msg);
  assert.deepEqual(logged, ['routing failed']);
  await assert.rejects(server.close(), /The server logged errors/);
  await dns.close();
});

test('RCPT when routing cannot be read is deferred with 451 4.3.0, never refused for good', async () => {
  const { db } = server.app.database;
  const smtp = await openSmtpConversation(server.smtpPort);
  await smtp.command('EHLO client.test');
  await smtp.command('MAIL FROM:<a@sender.test>');
  // Routing's one query now fails, as it would on a broken database.
  await sql`ALTER TABLE domains RENAME TO domains_away`.execute(db);
  try {
    assert.equal(
      await smtp.command('RCPT TO:<inbox@routing-failure.test>'),
      '451 4.3.0 Temporary failure, please try again later',
    );
  } finally {
    await sql`ALTER TABLE domains_away RENAME TO domains`.execute(db);
  }
  assert.equal(await smtp.command('RCPT TO:<inbox@routing-failure.test>'), '250 2.1.5 Accepted');
  await smtp.quit();
});
