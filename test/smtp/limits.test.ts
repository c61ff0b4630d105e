import assert from 'node:assert/strict';
import { test } from 'node:test';
import { startTestApp } from '../helpers/app.ts';
import { openSmtpConversation } from '../helpers/smtp.ts';

test('SMTP_MAX_CONNECTIONS: a connection over the cap is refused with 421, and a freed slot is usable again', async () => {
  const server = await startTestApp({ SMTP_MAX_CONNECTIONS: '2', DNS_SERVERS: '127.0.0.1:9' });
  try {
    const first = await openSmtpConversation(server.smtpPort);
    const second = await openSmtpConversation(server.smtpPort);
    assert.match(first.greeting, /^220 /);
    assert.match(second.greeting, /^220 /);

    const third = await openSmtpConversation(server.smtpPort);
    assert.match(third.greeting, /^421 /);
    await third.closed;

    assert.match(await first.quit(), /^221 /);
    const fourth = await openSmtpConversation(server.smtpPort);
    assert.match(fourth.greeting, /^220 /);
    assert.match(await fourth.command('EHLO client.test'), /^250[- ]/);
    await fourth.quit();
    await second.quit();
  } finally {
    await server.close();
  }
});
