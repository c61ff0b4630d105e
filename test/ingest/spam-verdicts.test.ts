import assert from 'node:assert/strict';
import { after, before, beforeEach, test } from 'node:test';
import { loadConfig } from '../../src/config/index.ts';
import { MAX_SCANNED_BYTES } from '../../src/ingest/spamd.ts';
import type { TestApp } from '../helpers/app.ts';
import { type DnsServer, startDnsServer } from '../helpers/dns-server.ts';
import { apiClient } from '../helpers/http.ts';
import { sendMail } from '../helpers/smtp.ts';
import { GTUBE, type SpamdServer, startSpamdServer } from '../helpers/spamd-server.ts';
import { startReceivingApp } from '../smtp/mail-setup.ts';

let dns: DnsServer;
let spamd: SpamdServer;
let server: TestApp;

before(async () => {
  dns = await startDnsServer();
  spamd = await startSpamdServer();
  server = await startReceivingApp(dns, 'inbox@spam.test', { SPAMD_URL: spamd.url, SPAMD_TIMEOUT_SECONDS: '0.5' });
});
after(async () => {
  await server.close();
  await spamd.close();
  await dns.close();
});
beforeEach(() => {
  spamd.setMode('judge');
  spamd.requests.length = 0;
});

const message = (subject: string, body: string) =>
  `From: a@sender.test\r\nTo: inbox@spam.test\r\nSubject: ${subject}\r\nMessage-ID: <${subject}@sender.test>\r\n\r\n${body}\r\n`;

/** Sends a message, which must be accepted, and returns its stored spam and virus verdicts as the API shows them. */
async function deliver(subject: string, body: string, to: TestApp = server) {
  const sent = await sendMail({ port: to.smtpPort, to: 'inbox@spam.test', raw: message(subject, body) });
  assert.equal(sent.code, 250, sent.response);
  const email = await apiClient(to.baseUrl, to.apiKey).get(`/api/v2/mail/${sent.queuedIds[0]}`);
  assert.equal(email.status, 200, JSON.stringify(email.body));
  return { spam: email.body.security.spam, virus: email.body.security.virus };
}

test('spamd judges each message: spam is FAIL, the rest PASS; virus stays DISABLED', async () => {
  assert.deepEqual(await deliver('gtube', `Buy now. ${GTUBE}`), { spam: 'FAIL', virus: 'DISABLED' });
  assert.deepEqual(await deliver('ham', 'Lunch at noon?'), { spam: 'PASS', virus: 'DISABLED' });
});

test('with INGEST_WORKERS=0 (checks on the event loop) spamd is asked too', async () => {
  const inline = await startReceivingApp(dns, 'inbox@spam.test', { SPAMD_URL: spamd.url, INGEST_WORKERS: '0' });
  try {
    assert.deepEqual(await deliver('inline', GTUBE, inline), { spam: 'FAIL', virus: 'DISABLED' });
    assert.equal(spamd.requests.length, 1);
  } finally {
    await inline.close();
  }
});

test('spamd gets a CHECK with the exact length, and the message as stored: our trace header first', async () => {
  await deliver('exact', 'Just the facts.');
  assert.equal(spamd.requests.length, 1);
  const [request] = spamd.requests;
  assert.equal(request!.command, 'CHECK SPAMC/1.5');
  assert.equal(request!.headers['content-length'], String(request!.message.length));
  const text = request!.message.toString('latin1');
  assert.match(text, /^Return-Path: <\S+>\r\nReceived: from \S+ \(\S* ?\[127\.0\.0\.1\]\)\r\n\tby mx\.mailroom\.test /);
  assert.ok(text.endsWith(message('exact', 'Just the facts.')), text);
});

test('spamd failing, silent past SPAMD_TIMEOUT_SECONDS, or unreachable gives TEMPERROR, and the mail is still stored', async () => {
  spamd.setMode('refuse');
  assert.deepEqual(await deliver('refused', 'one'), { spam: 'TEMPERROR', virus: 'DISABLED' });
  spamd.setMode('hang');
  const started = Date.now();
  assert.deepEqual(await deliver('silent', 'two'), { spam: 'TEMPERROR', virus: 'DISABLED' });
  assert.ok(Date.now() - started >= 500, 'waited for the timeout');
  assert.equal(spamd.requests.length, 2);

  const unreachable = await startReceivingApp(dns, 'inbox@spam.test', { SPAMD_URL: 'spamd://127.0.0.1:9' });
  try {
    assert.deepEqual(await deliver('unreachable', 'three', unreachable), { spam: 'TEMPERROR', virus: 'DISABLED' });
  } finally {
    await unreachable.close();
  }
});

test('a message over the scanning limit is not sent to spamd: NONE', async () => {
  const body = `${'x'.repeat(998)}\r\n`.repeat(Math.ceil(MAX_SCANNED_BYTES / 1000));
  assert.deepEqual(await deliver('big', body), { spam: 'NONE', virus: 'DISABLED' });
  assert.equal(spamd.requests.length, 0);
});

test('SPAMD_URL: spamd:// with an optional port (783 by default); anything else is a configuration error', () => {
  assert.deepEqual(loadConfig({ SPAMD_URL: 'spamd://scanner.internal' }).spamd, {
    host: 'scanner.internal',
    port: 783,
    timeoutMs: 10_000,
  });
  assert.deepEqual(loadConfig({ SPAMD_URL: 'spamd://[::1]:7830', SPAMD_TIMEOUT_SECONDS: '2.5' }).spamd, {
    host: '::1',
    port: 7830,
    timeoutMs: 2500,
  });
  assert.equal(loadConfig({}).spamd, undefined);
  assert.throws(
    () => loadConfig({ SPAMD_URL: 'http://scanner.internal:783' }),
    /^Error: Invalid configuration: SPAMD_URL=/,
  );
});
