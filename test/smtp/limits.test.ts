import assert from 'node:assert/strict';
import { readdir } from 'node:fs/promises';
import { connect } from 'node:net';
import { join } from 'node:path';
import { test } from 'node:test';
import { startTestApp, type TestApp } from '../helpers/app.ts';
import { rawBlobKeys } from '../helpers/blobs.ts';
import { startDnsServer } from '../helpers/dns-server.ts';
import { apiClient } from '../helpers/http.ts';
import { parsePrometheusText } from '../helpers/prometheus.ts';
import { openSmtpConversation, type SmtpConversation } from '../helpers/smtp.ts';
import { startReceivingApp } from './mail-setup.ts';

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
    // Counted, as the edge's other limits are: the sign that the server turns mail away at capacity.
    const metrics = parsePrometheusText((await apiClient(server.baseUrl, server.apiKey).get('/metrics')).body);
    assert.equal(metrics.value('mailroom_smtp_refusals_total', { reason: 'server_full' }), 1);
    assert.equal(metrics.value('mailroom_smtp_refusals_total', { reason: 'too_many_connections' }), 0);

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

/** Connects and waits until the server has closed the connection (after its 421), reading nothing. */
function refusedConnection(port: number): Promise<void> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    socket.on('error', () => resolve());
    socket.on('close', () => resolve());
    socket.resume();
  });
}

test('SMTP_MAX_CONNECTIONS: thousands of connections refused at the cap leave the connection it serves answering', async () => {
  const server = await startTestApp({ SMTP_MAX_CONNECTIONS: '1', DNS_SERVERS: '127.0.0.1:9' });
  try {
    const served = await openSmtpConversation(server.smtpPort);
    assert.match(served.greeting, /^220 /);
    // What a flood at capacity sends: each one is refused with 421 as it connects.
    for (let refused = 0; refused < 12_000; refused += 200) {
      await Promise.all(Array.from({ length: 200 }, () => refusedConnection(server.smtpPort)));
    }
    assert.match(await served.command('EHLO client.test'), /^250[- ]/);
    assert.equal(await served.command('NOOP'), '250 2.0.0 OK');
    assert.match(await served.quit(), /^221 /);
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

test('SMTP_CONNECTION_TIMEOUT_SECONDS: a busy connection gets 421 4.4.2 and is cut when its time is up', async () => {
  const server = await startTestApp({ SMTP_CONNECTION_TIMEOUT_SECONDS: '1', DNS_SERVERS: '127.0.0.1:9' });
  try {
    const client = await openSmtpConversation(server.smtpPort);
    let answered = 0;
    // NOOPs keep the connection from ever being idle; only the connection's deadline can end it.
    let reply = await client.command('NOOP');
    while (reply.startsWith('250')) {
      answered++;
      await new Promise((resolve) => setTimeout(resolve, 100));
      reply = await client.command('NOOP');
    }
    // Told why, as RFC 5321 §3.8 asks of a server that closes the connection.
    assert.equal(reply, '421 4.4.2 Connection time limit reached, closing connection');
    await client.closed;
    assert.ok(answered >= 3, `the connection was served until its deadline (${answered} NOOPs answered)`);
  } finally {
    await server.close();
  }
});

test('SMTP_MAX_CONNECTIONS_PER_IP: the 11th connection from one address gets 421 4.7.0, other addresses are still served', async () => {
  const server = await startTestApp({ DNS_SERVERS: '127.0.0.1:9' });
  const open: SmtpConversation[] = [];
  try {
    for (let i = 0; i < 10; i++) {
      const client = await openSmtpConversation(server.smtpPort);
      assert.match(client.greeting, /^220 /);
      open.push(client);
    }
    const eleventh = await openSmtpConversation(server.smtpPort);
    assert.equal(eleventh.greeting, '421 4.7.0 Too many connections from your address');
    await eleventh.closed;

    // The cap is per client address, not global.
    const elsewhere = await openSmtpConversation(server.smtpPort, '127.0.0.1', '127.0.0.2');
    assert.match(elsewhere.greeting, /^220 /);
    assert.match(await elsewhere.quit(), /^221 /);

    // A slot freed by one of the ten is usable again.
    assert.match(await open.shift()!.quit(), /^221 /);
    const again = await openSmtpConversation(server.smtpPort);
    assert.match(again.greeting, /^220 /);
    open.push(again);
    assert.match(await again.command('EHLO client.test'), /^250[- ]/);
  } finally {
    for (const client of open) await client.destroy();
    await server.close();
  }
});

/** A receiving app whose DATA must carry 1024 bytes/s over each half-second window. */
async function startRateLimitedApp() {
  const dns = await startDnsServer();
  const server = await startReceivingApp(dns, 'inbox@rate.test', {
    SMTP_MIN_DATA_RATE_BYTES_PER_SECOND: '1024',
    SMTP_DATA_RATE_WINDOW_SECONDS: '0.5',
  });
  return {
    server,
    async close() {
      await server.close();
      await dns.close();
    },
  };
}

async function openData(server: TestApp): Promise<SmtpConversation> {
  const client = await openSmtpConversation(server.smtpPort);
  assert.match(await client.command('EHLO client.test'), /^250[- ]/);
  assert.match(await client.command('MAIL FROM:<a@sender.test>'), /^250 /);
  assert.match(await client.command('RCPT TO:<inbox@rate.test>'), /^250 /);
  assert.equal(await client.command('DATA'), '354 End data with <CR><LF>.<CR><LF>');
  return client;
}

async function storedFiles(server: TestApp): Promise<string[]> {
  const entries = await readdir(join(server.dataDir, 'blobs'), { recursive: true, withFileTypes: true }).catch(
    () => [],
  );
  return entries.filter((entry) => entry.isFile()).map((entry) => entry.name);
}

test('SMTP_MIN_DATA_RATE_BYTES_PER_SECOND: DATA trickled below the rate gets 421 and a close, and nothing is stored', async () => {
  const { server, close } = await startRateLimitedApp();
  try {
    const client = await openData(server);
    let closed = false;
    void client.closed.then(() => {
      closed = true;
    });
    await client.write('Subject: trickle\r\n\r\n');
    // One byte every 100 ms, for at most 5 s: far below 1024 bytes/s, yet never idle.
    for (let i = 0; i < 50 && !closed; i++) {
      await client.write('x').catch(() => undefined);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    assert.equal(closed, true, 'the server closed the connection');
    assert.equal(await client.reply(), '421 4.4.2 Data arriving too slowly, closing connection');
    assert.deepEqual(await server.app.database.db.selectFrom('emails').select('id').execute(), []);
    assert.deepEqual(await rawBlobKeys(server.app.blobs), []);
    assert.deepEqual(await storedFiles(server), []);
  } finally {
    await close();
  }
});

test('SMTP_MIN_DATA_RATE_BYTES_PER_SECOND: a message sent over several windows at a normal rate, with a pause, gets 250', async () => {
  const { server, close } = await startRateLimitedApp();
  try {
    const client = await openData(server);
    await client.write('Subject: steady\r\n\r\n');
    const line = `${'y'.repeat(1022)}\r\n`;
    // 8 KiB every 100 ms for 1.5 s, three windows, with a 200 ms pause in the middle.
    for (let i = 0; i < 15; i++) {
      await client.write(line.repeat(8));
      await new Promise((resolve) => setTimeout(resolve, i === 7 ? 200 : 100));
    }
    await client.write('.\r\n');
    assert.match(await client.reply(), /^250 2\.6\.0 Ok: queued as email_/);
    assert.match(await client.quit(), /^221 /);
    const rows = await server.app.database.db.selectFrom('emails').select('subject').execute();
    assert.deepEqual(rows, [{ subject: 'steady' }]);
  } finally {
    await close();
  }
});

test('RCPT: the 20th recipient a connection has refused is followed by 421 4.7.0 and a close, so addresses cannot be tried by the thousand', async () => {
  const dns = await startDnsServer();
  const server = await startReceivingApp(dns, 'inbox@harvest.test');
  try {
    const client = await openSmtpConversation(server.smtpPort);
    assert.match(await client.command('EHLO client.test'), /^250[- ]/);
    assert.equal(await client.command('MAIL FROM:<a@sender.test>'), '250 2.1.0 Accepted');
    // Refusals count for the whole connection, across transactions, and accepted recipients do not reset them.
    for (let i = 1; i <= 10; i++)
      assert.match(await client.command(`RCPT TO:<guess${i}@harvest.test>`), /^550 5\.1\.1 /);
    assert.equal(await client.command('RSET'), '250 2.0.0 Flushed');
    assert.equal(await client.command('MAIL FROM:<a@sender.test>'), '250 2.1.0 Accepted');
    for (let i = 11; i <= 18; i++)
      assert.match(await client.command(`RCPT TO:<guess${i}@harvest.test>`), /^550 5\.1\.1 /);
    assert.equal(await client.command('RCPT TO:<victim@elsewhere.test>'), '550 5.7.1 Relaying denied');
    assert.equal(await client.command('RCPT TO:<inbox@harvest.test>'), '250 2.1.5 Accepted');
    assert.equal(
      await client.command('RCPT TO:<guess20@harvest.test>'),
      '550 5.1.1 <guess20@harvest.test>: Recipient address rejected: User unknown',
    );
    assert.equal(await client.reply(), '421 4.7.0 Too many refused recipients, closing connection');
    await client.closed;

    // Another connection starts with no refusals.
    const next = await openSmtpConversation(server.smtpPort);
    assert.match(await next.command('EHLO client.test'), /^250[- ]/);
    assert.equal(await next.command('MAIL FROM:<a@sender.test>'), '250 2.1.0 Accepted');
    assert.match(await next.command('RCPT TO:<guess1@harvest.test>'), /^550 5\.1\.1 /);
    assert.equal(await next.command('RCPT TO:<inbox@harvest.test>'), '250 2.1.5 Accepted');
    assert.match(await next.quit(), /^221 /);
  } finally {
    await server.close();
    await dns.close();
  }
});

test('SMTP_MAX_BUFFERED_BYTES: a message that would pass what all connections may hold gets 452 4.3.1, and fits once the others are stored or gone', async () => {
  const dns = await startDnsServer();
  const address = 'budget@limits.test';
  const server = await startReceivingApp(dns, address, {
    SMTP_MAX_MESSAGE_BYTES: String(1024 * 1024),
    SMTP_MAX_BUFFERED_BYTES: String(1536 * 1024),
  });
  const message = (bytes: number) => `Subject: budget\r\n\r\n${'x'.repeat(76)}\r\n`.repeat(Math.ceil(bytes / 98));
  const send = async (client: SmtpConversation, body: string) => {
    await client.write(`${body}.\r\n`);
    return client.reply();
  };
  try {
    // The first holds 900 KB while still receiving; the second's 700 KB would make 1.6 MB of the 1.5 MB allowed.
    const first = await openSmtpConversation(server.smtpPort);
    const second = await openSmtpConversation(server.smtpPort);
    for (const client of [first, second]) {
      assert.match(await client.command('EHLO client.test'), /^250[- ]/);
      assert.match(await client.command('MAIL FROM:<ann@sender.test>'), /^250 /);
      assert.match(await client.command(`RCPT TO:<${address}>`), /^250 /);
      assert.match(await client.command('DATA'), /^354 /);
    }
    const held = message(900 * 1024);
    await first.write(held);
    // Written is not yet read: a moment lets the server take the first's bytes before the second's arrive.
    await new Promise((resolve) => setTimeout(resolve, 500));
    assert.equal(
      await send(second, message(700 * 1024)),
      '452 4.3.1 Insufficient system storage, please try again later',
    );
    assert.match(await send(first, ''), /^250 /);
    // Stored and let go, the first no longer counts: the same message now fits.
    assert.match(await second.command('MAIL FROM:<ann@sender.test>'), /^250 /);
    assert.match(await second.command(`RCPT TO:<${address}>`), /^250 /);
    assert.match(await second.command('DATA'), /^354 /);
    assert.match(await send(second, message(700 * 1024)), /^250 /);
    await first.quit();
    await second.quit();
    // A client gone in the middle of DATA gives its part back too: three such would hold 2.7 MB if it did not.
    for (let dropped = 0; dropped < 3; dropped++) {
      const client = await openSmtpConversation(server.smtpPort);
      assert.match(await client.command('EHLO client.test'), /^250[- ]/);
      assert.match(await client.command('MAIL FROM:<ann@sender.test>'), /^250 /);
      assert.match(await client.command(`RCPT TO:<${address}>`), /^250 /);
      assert.match(await client.command('DATA'), /^354 /);
      await client.write(held);
      client.destroy();
      await client.closed;
    }
    const last = await openSmtpConversation(server.smtpPort);
    assert.match(await last.command('EHLO client.test'), /^250[- ]/);
    assert.match(await last.command('MAIL FROM:<ann@sender.test>'), /^250 /);
    assert.match(await last.command(`RCPT TO:<${address}>`), /^250 /);
    assert.match(await last.command('DATA'), /^354 /);
    assert.match(await send(last, message(900 * 1024)), /^250 /);
    await last.quit();
  } finally {
    await server.close();
    await dns.close();
  }
});

test('the 20th syntax or sequence error a connection has is followed by 421 4.7.0 and a close', async () => {
  const server = await startTestApp({ DNS_SERVERS: '127.0.0.1:9' });
  try {
    const client = await openSmtpConversation(server.smtpPort);
    // Errors of every kind count together, for the whole connection; answers that are not errors do not reset them.
    assert.equal(await client.command('MAIL FROM:<ann@sender.test>'), '503 5.5.1 Error: send HELO/EHLO first');
    assert.match(await client.command('EHLO client.test'), /^250[- ]/);
    assert.equal(await client.command('RCPT TO:<inbox@limits.test>'), '503 5.5.1 Error: need MAIL command');
    assert.equal(await client.command('BOGUS'), '500 5.5.2 Error: command not recognized');
    assert.equal(
      await client.command('MAIL FROM:<ann@sender.test> NOTIFY=NEVER'),
      '555 5.5.4 Unsupported parameter NOTIFY',
    );
    for (let error = 5; error <= 19; error++) {
      assert.equal(await client.command('MAIL FROM:<ann@'), '501 5.1.7 Error: Bad sender address syntax');
      assert.equal(await client.command('NOOP'), '250 2.0.0 OK');
    }
    assert.equal(await client.command('MAIL FROM:<ann@sender.test>'), '250 2.1.0 Accepted');
    assert.equal(await client.command('MAIL FROM:<ann@sender.test>'), '503 5.5.1 Error: nested MAIL command');
    assert.equal(await client.reply(), '421 4.7.0 Too many errors, closing connection');
    await client.closed;

    // Another connection starts with none.
    const next = await openSmtpConversation(server.smtpPort);
    assert.match(await next.command('EHLO client.test'), /^250[- ]/);
    assert.equal(await next.command('MAIL FROM:<ann@'), '501 5.1.7 Error: Bad sender address syntax');
    assert.equal(await next.command('MAIL FROM:<ann@sender.test>'), '250 2.1.0 Accepted');
    assert.match(await next.quit(), /^221 /);
  } finally {
    await server.close();
  }
});
