import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { apiClient } from '../helpers/http.ts';
import { runScript, startServerProcess } from '../helpers/process.ts';
import { sendMail } from '../helpers/smtp.ts';
import { startWebhookReceiver } from '../helpers/webhook-receiver.ts';

/** What a user's shell gives `npx mailroom dev`: no DNS server, no Mailroom variables but the two ports. */
const USER_ENV = { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', PORT: '0', SMTP_PORT: '0' };
const READY = /Bearer \S+ \S+\/api\/v2\/mail\n/;

/** Runs `mailroom dev` as `npx mailroom dev` does: the package's bin, from the user's folder. */
function startDev(cwd: string, env: Record<string, string> = USER_ENV) {
  return startServerProcess(env, 30_000, { command: ['bin/mailroom.mjs', 'dev'], cwd, ready: READY });
}

/** The key, address and listeners the sandbox printed, and its swaks line read as a sender would. */
function printed(stdout: string) {
  const swaks = stdout.match(/^ {2}swaks --server (\S+):(\d+) --from (\S+) --to (\S+)$/m);
  const curl = stdout.match(/^ {2}curl -H "Authorization: Bearer (mr_\w+)" (http:\/\/\S+)\/api\/v2\/mail$/m);
  const key = stdout.match(/^ {2}API key {3}(mr_\w+) /m)?.[1];
  const http = stdout.match(/^ {2}HTTP {6}(http:\/\/\S+)$/m)?.[1];
  const smtp = stdout.match(/^ {2}SMTP {6}(\S+)$/m)?.[1];
  const address = stdout.match(/^ {2}Address {3}(\S+)/m)?.[1];
  assert.ok(swaks && curl && key && http && smtp && address, stdout);
  assert.equal(curl[1], key);
  assert.equal(curl[2], http);
  assert.equal(`${swaks[1]}:${swaks[2]}`, smtp);
  assert.equal(swaks[4], address);
  return { key, http, host: swaks[1]!, port: Number(swaks[2]), from: swaks[3]!, to: swaks[4]! };
}

async function findMail(http: string, key: string, subject: string) {
  const api = apiClient(http, key);
  for (let attempt = 0; attempt < 20; attempt++) {
    const list = await api.get('/api/v2/mail');
    assert.equal(list.status, 200);
    const found = list.body.emails.find((email: { subject: string }) => email.subject === subject);
    if (found) return found;
    await sleep(100);
  }
  assert.fail(`no mail "${subject}" within 2 s`);
}

test('mailroom dev: on an empty folder the printed swaks line delivers a mail the printed curl line finds', async () => {
  const folder = await mkdtemp(join(tmpdir(), 'mailroom-dev-'));
  const dev = await startDev(folder);
  try {
    const sandbox = printed(dev.stdout());
    assert.equal(sandbox.to, 'inbox@mailroom.test');
    assert.notEqual(sandbox.port, 0, 'the real SMTP port, not PORT=0');
    assert.match(dev.stdout(), new RegExp(`^ {2}Data {6}${join(folder, '.mailroom-dev')}$`, 'm'));
    const sent = await sendMail({
      host: sandbox.host,
      port: sandbox.port,
      from: sandbox.from,
      to: sandbox.to,
      subject: 'First contact',
    });
    assert.equal(sent.ok, true, sent.response);
    const mail = await findMail(sandbox.http, sandbox.key, 'First contact');
    assert.equal(mail.from, 'you@example.com');

    const other = await sendMail({ host: sandbox.host, port: sandbox.port, to: 'anyone@mailroom.test' });
    assert.equal(other.ok, true, 'the catch-all keeps mail to any address on the sandbox domain');
    const elsewhere = await sendMail({ host: sandbox.host, port: sandbox.port, to: 'someone@example.com' });
    assert.equal(elsewhere.ok, false);
    assert.equal(await dev.stop(), 0);
  } finally {
    dev.child.kill('SIGKILL');
    await rm(folder, { recursive: true, force: true });
  }
});

test('mailroom dev: a webhook at localhost, as in the README tour, gets the test event and the mail', async () => {
  const folder = await mkdtemp(join(tmpdir(), 'mailroom-dev-'));
  const receiver = await startWebhookReceiver();
  const dev = await startDev(folder);
  try {
    const sandbox = printed(dev.stdout());
    const api = apiClient(sandbox.http, sandbox.key);
    const url = `http://localhost:${receiver.port}/hook`;
    const endpoint = await api.post('/api/v2/endpoints', { name: 'local', type: 'webhook', config: { url } });
    assert.equal(endpoint.status, 201, JSON.stringify(endpoint.body));
    const tested = await api.post(`/api/v2/endpoints/${endpoint.body.id}/test`, {});
    assert.deepEqual([tested.body.success, tested.body.statusCode], [true, 200], JSON.stringify(tested.body));
    const inbox = (await api.get('/api/v2/email-addresses')).body.data[0];
    assert.equal((await api.put(`/api/v2/email-addresses/${inbox.id}`, { endpointId: endpoint.body.id })).status, 200);
    const sent = await sendMail({ host: sandbox.host, port: sandbox.port, to: sandbox.to, subject: 'Hello' });
    assert.equal(sent.ok, true, sent.response);
    await receiver.waitForRequests(2);
    assert.deepEqual(
      receiver.requests.map((request) => JSON.parse(request.body).email.subject),
      ['Test webhook from Mailroom', 'Hello'],
    );
    // Only addresses fall back to the system resolver: the sender's records are still not asked of the Internet.
    const stored = await api.get(`/api/v2/mail/${JSON.parse(receiver.requests[1]!.body).email.id}`);
    assert.deepEqual([stored.body.security.spf, stored.body.security.dmarc], ['TEMPERROR', 'TEMPERROR']);
    assert.equal(await dev.stop(), 0);
  } finally {
    dev.child.kill('SIGKILL');
    await receiver.stop();
    await rm(folder, { recursive: true, force: true });
  }
});

test('mailroom dev: a rerun on the same folder keeps the domain, address and mail, and prints a new working key', async () => {
  const folder = await mkdtemp(join(tmpdir(), 'mailroom-dev-'));
  try {
    const first = await startDev(folder);
    const before = printed(first.stdout());
    assert.equal((await sendMail({ host: before.host, port: before.port, to: before.to, subject: 'Before' })).ok, true);
    await findMail(before.http, before.key, 'Before');
    assert.match(
      first.stdout(),
      /^ {2}Address {3}inbox@mailroom\.test \(any other address @mailroom\.test is kept too/m,
    );
    // What the user changes stays changed: here the catch-all, switched off.
    const firstApi = apiClient(before.http, before.key);
    const [domain] = (await firstApi.get('/api/v2/domains')).body.data;
    assert.equal((await firstApi.put(`/api/v2/domains/${domain.id}`, { isCatchAllEnabled: false })).status, 200);
    assert.equal(await first.stop(), 0);

    const second = await startDev(folder);
    try {
      const after = printed(second.stdout());
      assert.notEqual(after.key, before.key);
      assert.match(second.stdout(), /\(new on each run; earlier ones keep working\)/);
      const api = apiClient(after.http, after.key);
      const domains = await api.get('/api/v2/domains');
      assert.deepEqual(
        domains.body.data.map((d: { domain: string; status: string; isCatchAllEnabled: boolean }) => [
          d.domain,
          d.status,
          d.isCatchAllEnabled,
        ]),
        [['mailroom.test', 'verified', false]],
      );
      assert.match(second.stdout(), /^ {2}Address {3}inbox@mailroom\.test$/m);
      const endpoints = await api.get('/api/v2/endpoints');
      assert.deepEqual(
        endpoints.body.data.map((e: { name: string }) => e.name),
        ['Sandbox catch-all'],
      );
      const addresses = await api.get('/api/v2/email-addresses');
      assert.deepEqual(
        addresses.body.data.map((a: { address: string; isActive: boolean }) => [a.address, a.isActive]),
        [['inbox@mailroom.test', true]],
      );
      await findMail(after.http, before.key, 'Before');
      assert.equal((await sendMail({ host: after.host, port: after.port, to: after.to, subject: 'After' })).ok, true);
      await findMail(after.http, after.key, 'After');
      assert.equal(await second.stop(), 0);
    } finally {
      second.child.kill('SIGKILL');
    }
  } finally {
    await rm(folder, { recursive: true, force: true });
  }
});

test('mailroom dev: a rerun finds the sandbox address past the first 100 addresses and switches it back on', async () => {
  const folder = await mkdtemp(join(tmpdir(), 'mailroom-dev-'));
  try {
    const first = await startDev(folder);
    const before = printed(first.stdout());
    const api = apiClient(before.http, before.key);
    const [domain] = (await api.get('/api/v2/domains')).body.data;
    const inbox = (await api.get('/api/v2/email-addresses')).body.data[0];
    assert.equal(inbox.address, 'inbox@mailroom.test');
    assert.equal((await api.put(`/api/v2/email-addresses/${inbox.id}`, { isActive: false })).status, 200);
    // Newer addresses come first in a list: these push the sandbox address off its first page.
    for (let i = 0; i < 100; i++) {
      const created = await api.post('/api/v2/email-addresses', {
        address: `user${i}@mailroom.test`,
        domainId: domain.id,
      });
      assert.equal(created.status, 201, JSON.stringify(created.body));
    }
    assert.equal(await first.stop(), 0);

    const second = await startDev(folder);
    try {
      const after = printed(second.stdout());
      const reread = await apiClient(after.http, after.key).get(`/api/v2/email-addresses/${inbox.id}`);
      assert.equal(reread.body.isActive, true);
      assert.equal((await sendMail({ host: after.host, port: after.port, to: after.to, subject: 'Back' })).ok, true);
      await findMail(after.http, after.key, 'Back');
      assert.equal(await second.stop(), 0);
    } finally {
      second.child.kill('SIGKILL');
    }
  } finally {
    await rm(folder, { recursive: true, force: true });
  }
});

test('mailroom dev: a set-up that fails (a MAILROOM_API_KEY of another account) exits 1 with the reason', async () => {
  const folder = await mkdtemp(join(tmpdir(), 'mailroom-dev-'));
  try {
    const first = await startDev(folder);
    assert.equal(await first.stop(), 0);
    const created = await runScript(
      'bin/mailroom.mjs',
      ['keys', 'create', '--account', 'other'],
      { ...USER_ENV, DATA_DIR: '.mailroom-dev' },
      folder,
    );
    assert.equal(created.code, 0, created.stderr);
    // Not a server left listening without a key printed: the process ends with the reason.
    await assert.rejects(
      startDev(folder, { ...USER_ENV, MAILROOM_API_KEY: created.stdout.trim() }),
      /^Error: server exited with 1 before listening:\n[\s\S]*\nMAILROOM_API_KEY is a key of another account than "default": unset it, or set a key of "default"\n$/,
    );
  } finally {
    await rm(folder, { recursive: true, force: true });
  }
});

test('mailroom dev: a revoked MAILROOM_API_KEY is warned about and a working key is printed in its place', async () => {
  const folder = await mkdtemp(join(tmpdir(), 'mailroom-dev-'));
  const env = { ...USER_ENV, MAILROOM_API_KEY: 'mr_sandbox_key_0123456789' };
  try {
    const first = await startDev(folder, env);
    const keys = apiClient(printed(first.stdout()).http, env.MAILROOM_API_KEY);
    const other = (await keys.post('/api/v2/keys', {})).body.key;
    const configured = (await keys.get('/api/v2/keys')).body.data.find((key: { prefix: string }) =>
      env.MAILROOM_API_KEY.startsWith(key.prefix),
    );
    assert.equal((await keys.delete(`/api/v2/keys/${configured.id}`)).status, 200);
    assert.equal(await first.stop(), 0);

    const second = await startDev(folder, env);
    try {
      const sandbox = printed(second.stdout());
      assert.notEqual(sandbox.key, env.MAILROOM_API_KEY);
      assert.match(second.stdout(), / {2}API key {3}mr_\w+ \(new on each run; earlier ones keep working\)\n/);
      assert.match(
        second.stdout(),
        /\nWarning: MAILROOM_API_KEY was revoked at \S+ and authenticates nothing: unset it, or set an active key of "default"\n/,
      );
      assert.equal((await apiClient(sandbox.http, sandbox.key).get('/api/v2/mail')).status, 200);
      assert.equal((await apiClient(sandbox.http, env.MAILROOM_API_KEY).get('/api/v2/mail')).status, 401);
      assert.equal((await apiClient(sandbox.http, other).get('/api/v2/mail')).status, 200);
    } finally {
      await second.stop();
    }
  } finally {
    await rm(folder, { recursive: true, force: true });
  }
});

test('mailroom dev: DATABASE_URL is refused with a message and exit code 1', async () => {
  const folder = await mkdtemp(join(tmpdir(), 'mailroom-dev-'));
  try {
    const result = await runScript(
      'bin/mailroom.mjs',
      ['dev'],
      { ...USER_ENV, DATABASE_URL: 'postgres://postgres@127.0.0.1:5432/test' },
      folder,
    );
    assert.equal(result.code, 1);
    assert.equal(
      result.stderr,
      'mailroom dev runs on SQLite in its own folder and refuses DATABASE_URL: unset it for the sandbox, ' +
        'or run mailroom serve to use PostgreSQL\n',
    );
    assert.equal(result.stdout, '');
  } finally {
    await rm(folder, { recursive: true, force: true });
  }
});
