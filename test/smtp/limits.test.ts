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

test('SMTP_IDLE_TIMEOUT_SECONDS: a client that goes silent gets 421 and is disconnected', async () => {
  const server = await startTestApp({ SMTP_IDLE_TIMEOUT_SECONDS: '0.5', DNS_SERVERS: '127.0.0.1:9' });
  try {
    const client = await openSmtpConversation(server.smtpPort);
    assert.match(await client.command('EHLO client.test'), /^250[- ]/);
    assert.match(await client.reply(), /^421 /);
    await client.closed;
  } finally {
    await server.close();
  }
});

test('SMTP_CONNECTION_TIMEOUT_SECONDS: a busy connection is cut when its time is up', async () => {
  const server = await startTestApp({ SMTP_CONNECTION_TIMEOUT_SECONDS: '1', DNS_SERVERS: '127.0.0.1:9' });
  try {
    const client = await openSmtpConversation(server.smtpPort);
    let answered = 0;
    // NOOPs keep the connection from ever being idle; only the connection's deadline can end it.
    while ((await client.command('NOOP')).startsWith('250')) {
      answered++;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    await client.closed;
    assert.ok(answered >= 3, `the connection was served until its deadline (${answered} NOOPs answered)`);
  } finally {
    await server.close();
  }
});
