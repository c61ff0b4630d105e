import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { after, before, test } from 'node:test';
import { startTestApp, type TestApp } from '../helpers/app.ts';
import { manualClock } from '../helpers/clock.ts';
import { openSmtpConversation, type SmtpConversation } from '../helpers/smtp.ts';

/**
 * A client's addresses: three of one /64 network, one of another. Loopback has no IPv6 address but ::1, so these tests
 * run again in a network namespace of their own (`unshare`, iproute2) whose loopback is given these addresses; the
 * server there runs on SQLite, PostgreSQL being out of the namespace's reach.
 */
const SAME_NETWORK = ['2001:db8:1:1::a', '2001:db8:1:1::b', '2001:db8:1:1::c'] as const;
const OTHER_NETWORK = '2001:db8:1:2::a';
const INSIDE = process.env.MAILROOM_TEST_NETNS === '1';

if (!INSIDE) {
  test('IPv6 clients are limited per /64 network (run in a network namespace)', async () => {
    const setup = [
      'ip link set lo up',
      ...[...SAME_NETWORK, OTHER_NETWORK].map((address) => `ip -6 addr add ${address}/64 dev lo nodad`),
      'exec "$0" --test --test-reporter=tap --test-timeout=120000 --test-force-exit "$1"',
    ].join(' && ');
    const child = spawn(
      'unshare',
      ['--map-root-user', '--net', 'sh', '-c', setup, process.execPath, import.meta.filename],
      // Without the runner's own variable, which would make the child a part of this run that runs nothing.
      { env: { ...process.env, NODE_TEST_CONTEXT: undefined, MAILROOM_TEST_NETNS: '1', TEST_DATABASE_URL: '' } },
    );
    let output = '';
    child.stdout.on('data', (chunk) => {
      output += chunk;
    });
    child.stderr.on('data', (chunk) => {
      output += chunk;
    });
    const code = await new Promise((resolve) => child.once('close', resolve));
    assert.equal(code, 0, output);
    assert.match(output, /# pass 2\n/);
  });
} else {
  let server: TestApp;
  before(async () => {
    server = await startTestApp(
      {
        SMTP_HOST: '::',
        SMTP_MAX_CONNECTIONS_PER_IP: '2',
        SMTP_RATE_LIMIT_PER_MINUTE: '1',
        DNS_SERVERS: '127.0.0.1:9',
      },
      { clock: manualClock() },
    );
  });
  after(() => server.close());

  const connect = (from: string) => openSmtpConversation(server.smtpPort, '::1', from);

  test('SMTP_MAX_CONNECTIONS_PER_IP counts the connections of one /64 together', async () => {
    const open: SmtpConversation[] = [];
    try {
      for (const from of SAME_NETWORK.slice(0, 2)) {
        const client = await connect(from);
        assert.match(client.greeting, /^220 /);
        open.push(client);
      }
      const third = await connect(SAME_NETWORK[2]);
      assert.equal(third.greeting, '421 4.7.0 Too many connections from your address');
      await third.closed;
      const elsewhere = await connect(OTHER_NETWORK);
      assert.match(elsewhere.greeting, /^220 /);
      assert.match(await elsewhere.quit(), /^221 /);
    } finally {
      for (const client of open) await client.destroy();
    }
  });

  test('SMTP_RATE_LIMIT_PER_MINUTE counts the messages of one /64 together', async () => {
    const mailFrom = async (from: string) => {
      const client = await connect(from);
      assert.match(await client.command('EHLO client.test'), /^250[- ]/);
      const answer = await client.command('MAIL FROM:<ann@sender.test>');
      await client.quit();
      return answer;
    };
    assert.equal(await mailFrom(SAME_NETWORK[0]), '250 2.1.0 Accepted');
    assert.equal(
      await mailFrom(SAME_NETWORK[1]),
      '451 4.7.1 Too many messages from your address, try again in 60 seconds',
    );
    assert.equal(await mailFrom(OTHER_NETWORK), '250 2.1.0 Accepted');
  });
}
