import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { setTimeout as delay } from 'node:timers/promises';
import { startTestApp, TEST_DATABASE_URL, type TestApp } from '../helpers/app.ts';
import { type DnsServer, startDnsServer } from '../helpers/dns-server.ts';
import { createVerifiedDomain } from '../helpers/domains.ts';
import { type ApiClient, apiClient } from '../helpers/http.ts';
import { startS3Server } from '../helpers/s3.ts';
import { sendMail } from '../helpers/smtp.ts';
import { startPostgresProxy, startTcpProxy } from '../helpers/tcp-proxy.ts';
import { createAddress } from '../smtp/mail-setup.ts';

/** What the API answers while the database or the blob store cannot be reached. */
const UNAVAILABLE = { error: 'Service temporarily unavailable, try again shortly' };

let dns: DnsServer;
before(async () => {
  dns = await startDnsServer();
});
after(async () => {
  await dns.close();
});

/** A verified domain with the store-only address `inbox@<domain>`; returns the address. */
async function storeOnlyAddress(api: ApiClient, domain: string): Promise<string> {
  const { id } = await createVerifiedDomain(api, dns, domain);
  await createAddress(api, `inbox@${domain}`, id);
  return `inbox@${domain}`;
}

async function get(server: TestApp, path: string) {
  const response = await fetch(`${server.baseUrl}${path}`, { headers: { authorization: `Bearer ${server.apiKey}` } });
  const text = await response.text();
  return { status: response.status, retryAfter: response.headers.get('retry-after'), text };
}

/** GET `path` until it answers 200, failing at the first answer that is neither 200 nor 503, or after 15 s. */
async function untilBack(server: TestApp, path: string) {
  const deadline = Date.now() + 15_000;
  for (;;) {
    const answer = await get(server, path);
    if (answer.status === 200) return answer;
    assert.equal(answer.status, 503, answer.text);
    assert.ok(Date.now() < deadline, `${path} still ${answer.status} after 15 s`);
    await delay(100);
  }
}

/**
 * While a store hangs: GETs `paths` and sends a message to `to` at once, and asserts each is answered within 20 s,
 * the reads 503 with Retry-After and the message 451.
 */
async function answeredWhileHung(server: TestApp, to: string, paths: string[]) {
  const started = Date.now();
  const answers = await Promise.race([
    Promise.all([
      Promise.all(paths.map((path) => get(server, path))),
      sendMail({ port: server.smtpPort, to, subject: 'While it hangs' }),
    ]),
    delay(30_000, 'no answer in 30 s' as const),
  ]);
  assert.notEqual(answers, 'no answer in 30 s');
  const [reads, deferred] = answers as Exclude<typeof answers, string>;
  for (const [index, read] of reads.entries()) {
    assert.deepEqual([read.status, read.retryAfter, JSON.parse(read.text)], [503, '5', UNAVAILABLE], paths[index]);
  }
  assert.equal(deferred.code, 451, deferred.response);
  assert.ok(Date.now() - started < 20_000, `answered after ${Date.now() - started} ms`);
}

/** A Mailroom on an S3 blob store reached through a proxy that can cut or hang the connection. */
async function startOnProxiedS3(env: Record<string, string> = {}) {
  const s3 = await startS3Server();
  const proxy = await startTcpProxy({ host: '127.0.0.1', port: Number(new URL(s3.env.S3_ENDPOINT!).port) });
  // In this process the SDK reads the credentials from process.env, as a deployment's would.
  const { AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, BLOB_STORE } = s3.env;
  Object.assign(process.env, { AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY });
  const server = await startTestApp({
    DNS_SERVERS: dns.address,
    BLOB_STORE: BLOB_STORE!,
    S3_ENDPOINT: `http://127.0.0.1:${proxy.port}`,
    ...env,
  });
  return { s3, proxy, server };
}

test('S3 out of reach: stored mail and its attachments answer 503 with Retry-After, not 404; SMTP answers 451 and stores nothing; both recover', async () => {
  const { s3, proxy, server } = await startOnProxiedS3();
  try {
    const api = apiClient(server.baseUrl, server.apiKey);
    const to = await storeOnlyAddress(api, 'outage-s3.test');
    const stored = await sendMail({
      port: server.smtpPort,
      to,
      subject: 'Stored before',
      attachments: [{ filename: 'report.txt', content: 'quarterly figures' }],
    });
    assert.equal(stored.code, 250, stored.response);
    const emailId = stored.queuedIds[0]!;
    const raw = await get(server, `/api/v2/mail/${emailId}/raw`);
    assert.equal(raw.status, 200);
    const listed = await api.get(`/api/e2/attachments/${emailId}`);
    const attachmentId = listed.body.data[0].id as string;

    proxy.cut();
    for (const path of [
      `/api/v2/mail/${emailId}/raw`,
      `/api/e2/attachments/${emailId}`,
      `/api/v2/attachments/${emailId}/report.txt`,
      `/api/v2/attachments/${emailId}/parts/${attachmentId}`,
    ]) {
      const answer = await get(server, path);
      assert.deepEqual([answer.status, answer.retryAfter, JSON.parse(answer.text)], [503, '5', UNAVAILABLE], path);
    }
    // The email itself is in the database: read without its raw content, saying why in the API's words only.
    const detail = await get(server, `/api/v2/mail/${emailId}`);
    assert.equal(detail.status, 200, detail.text);
    const { s3Info } = JSON.parse(detail.text).processing;
    assert.deepEqual([s3Info.contentFetched, s3Info.error], [false, 'Storage unavailable, try again shortly']);
    assert.ok(!detail.text.includes(String(proxy.port)), detail.text);
    const deferred = await sendMail({ port: server.smtpPort, to, subject: 'During the outage' });
    assert.equal(deferred.code, 451, deferred.response);
    assert.equal((await api.get('/api/v2/mail')).body.pagination.total, 1, 'nothing half-stored');

    proxy.restore();
    assert.equal((await untilBack(server, `/api/v2/mail/${emailId}/raw`)).text, raw.text);
    assert.equal((await get(server, `/api/v2/attachments/${emailId}/report.txt`)).text, 'quarterly figures');
    const retried = await sendMail({ port: server.smtpPort, to, subject: 'During the outage' });
    assert.equal(retried.code, 250, retried.response);
    assert.deepEqual(server.loggedErrors(), [], 'an outage is logged as a warning, not as a bug');
  } finally {
    await server.close();
    await proxy.close();
    await s3.close();
  }
});

test('PostgreSQL out of reach for a while: the API answers 503 with Retry-After, never 500; SMTP answers 451; both recover without a restart and nothing acknowledged is lost', {
  skip: TEST_DATABASE_URL ? false : 'needs TEST_DATABASE_URL (PostgreSQL)',
}, async () => {
  const { proxy, url } = await startPostgresProxy(TEST_DATABASE_URL!);
  const server = await startTestApp({ DNS_SERVERS: dns.address, DATABASE_URL: url });
  try {
    const api = apiClient(server.baseUrl, server.apiKey);
    const to = await storeOnlyAddress(api, 'outage-pg.test');
    const before = await sendMail({ port: server.smtpPort, to, subject: 'Before' });
    assert.equal(before.code, 250, before.response);

    proxy.cut();
    for (const path of ['/api/v2/mail', `/api/v2/mail/${before.queuedIds[0]}`, '/api/v2/domains']) {
      const answer = await get(server, path);
      assert.deepEqual([answer.status, answer.retryAfter, JSON.parse(answer.text)], [503, '5', UNAVAILABLE], path);
    }
    const deferred = await sendMail({ port: server.smtpPort, to, subject: 'During' });
    assert.equal(deferred.code, 451, deferred.response);

    proxy.restore();
    const back = await untilBack(server, '/api/v2/mail');
    assert.equal(JSON.parse(back.text).pagination.total, 1);
    const retried = await sendMail({ port: server.smtpPort, to, subject: 'During' });
    assert.equal(retried.code, 250, retried.response);
    const listed = await api.get('/api/v2/mail');
    assert.deepEqual(
      listed.body.emails.map((email: { id: string }) => email.id).sort(),
      [before.queuedIds[0], retried.queuedIds[0]].sort(),
    );
    assert.deepEqual(server.loggedErrors(), [], 'an outage is logged as a warning, not as a bug');
  } finally {
    await server.close();
    await proxy.close();
  }
});

test('PostgreSQL that stops answering: the API answers 503 and SMTP 451 within DATABASE_CONNECT_TIMEOUT_SECONDS, and the server closes', {
  skip: TEST_DATABASE_URL ? false : 'needs TEST_DATABASE_URL (PostgreSQL)',
}, async () => {
  const { proxy, url } = await startPostgresProxy(TEST_DATABASE_URL!);
  const server = await startTestApp({
    DNS_SERVERS: dns.address,
    DATABASE_URL: url,
    DATABASE_CONNECT_TIMEOUT_SECONDS: '1',
  });
  let closed = false;
  try {
    const api = apiClient(server.baseUrl, server.apiKey);
    const to = await storeOnlyAddress(api, 'hung-pg.test');
    const stored = await sendMail({ port: server.smtpPort, to, subject: 'Stored before' });
    assert.equal(stored.code, 250, stored.response);

    // The connections it had are gone; new ones are accepted and never answered.
    proxy.hang();
    await answeredWhileHung(server, to, ['/api/v2/mail', `/api/v2/mail/${stored.queuedIds[0]}`]);
    const closing = server.close().then(() => 'closed');
    closed = true;
    assert.equal(await Promise.race([closing, delay(20_000, 'still closing after 20 s')]), 'closed');
  } finally {
    if (!closed) await server.close();
    await proxy.close();
  }
});

test('S3 that stops answering: SMTP answers 451 and reads answer 503 within S3_TIMEOUT_SECONDS and its retries, and the server closes', async () => {
  const { s3, proxy, server } = await startOnProxiedS3({ S3_TIMEOUT_SECONDS: '1' });
  let closed = false;
  try {
    const api = apiClient(server.baseUrl, server.apiKey);
    const to = await storeOnlyAddress(api, 'hung-s3.test');
    const stored = await sendMail({ port: server.smtpPort, to, subject: 'Stored before' });
    assert.equal(stored.code, 250, stored.response);

    proxy.hang();
    await answeredWhileHung(server, to, [`/api/v2/mail/${stored.queuedIds[0]}/raw`]);
    // A put still waiting on the store would hold the close (ingest drains first).
    const closing = server.close().then(() => 'closed');
    closed = true;
    assert.equal(await Promise.race([closing, delay(20_000, 'still closing after 20 s')]), 'closed');
  } finally {
    if (!closed) await server.close();
    await proxy.close();
    await s3.close();
  }
});
