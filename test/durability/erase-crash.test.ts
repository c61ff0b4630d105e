import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { ListObjectsV2Command, S3Client } from '@aws-sdk/client-s3';
import { type MailroomProcess, startMailroom } from '../delivery/processes.ts';
import { type DnsServer, startDnsServer } from '../helpers/dns-server.ts';
import { createVerifiedDomain } from '../helpers/domains.ts';
import { createInstallation } from '../helpers/process.ts';
import { type S3Server, startS3Server } from '../helpers/s3.ts';
import { sendMail } from '../helpers/smtp.ts';
import { startTcpProxy, type TcpProxy } from '../helpers/tcp-proxy.ts';
import { createAddress } from '../smtp/mail-setup.ts';

const API_KEY = 'mr_test_erase_crash_0123456789abcd';
let dns: DnsServer;
let s3: S3Server;
let proxy: TcpProxy;
let installation: Awaited<ReturnType<typeof createInstallation>>;
let server: MailroomProcess;

before(async () => {
  dns = await startDnsServer();
  s3 = await startS3Server();
  proxy = await startTcpProxy({ host: '127.0.0.1', port: Number(new URL(s3.env.S3_ENDPOINT!).port) });
  installation = await createInstallation({
    MAILROOM_API_KEY: API_KEY,
    DNS_SERVERS: dns.address,
    ...s3.env,
    S3_ENDPOINT: `http://127.0.0.1:${proxy.port}`,
    S3_TIMEOUT_SECONDS: '1',
  });
});
after(async () => {
  await server?.stop('SIGKILL');
  await installation?.remove();
  await proxy?.close();
  await s3?.close();
  await dns?.close();
});

/** The raw messages in the bucket. */
async function storedBlobs(): Promise<string[]> {
  const client = new S3Client({
    region: 'us-east-1',
    endpoint: s3.env.S3_ENDPOINT,
    forcePathStyle: true,
    credentials: { accessKeyId: s3.env.AWS_ACCESS_KEY_ID!, secretAccessKey: s3.env.AWS_SECRET_ACCESS_KEY! },
  });
  try {
    const listed = await client.send(new ListObjectsV2Command({ Bucket: 'mailroom-test' }));
    return (listed.Contents ?? []).map((object) => object.Key!).sort();
  } finally {
    client.destroy();
  }
}

const FILTER = { emailAddress: 'subject@sender.test' };
let keptBlob: string;
let erasedBlobs: string[];

test('POST /api/v2/mail/erase while the blob store hangs: the rows go and the answer is 200 with the erasure, not a 503 that an erase already done cannot be retried after', async () => {
  server = await startMailroom(installation.env, API_KEY);
  const domain = await createVerifiedDomain(server.api, dns, 'erase-crash.test');
  await createAddress(server.api, 'inbox@erase-crash.test', domain.id);
  for (const from of ['subject@sender.test', 'subject@sender.test', 'bystander@sender.test']) {
    const sent = await sendMail({ port: server.smtpPort, from, to: 'inbox@erase-crash.test', subject: from });
    assert.equal(sent.code, 250, sent.response);
  }
  const blobs = await storedBlobs();
  assert.equal(blobs.length, 3);
  const [bystander] = (await server.api.get('/api/v2/mail?emailAddress=bystander@sender.test')).body.emails;
  keptBlob = (await server.api.get(`/api/v2/mail/${bystander.id}`)).body.processing.s3Info.objectKey;
  erasedBlobs = blobs.filter((key) => key !== keptBlob);
  assert.equal(erasedBlobs.length, 2);
  assert.deepEqual((await server.api.post('/api/v2/mail/erase', { ...FILTER, dryRun: true })).body, {
    dryRun: true,
    count: 2,
  });

  proxy.hang();
  const erased = await server.api.post('/api/v2/mail/erase', { ...FILTER, expectedCount: 2 });
  assert.equal(erased.status, 200, JSON.stringify(erased.body));
  assert.deepEqual([erased.body.dryRun, erased.body.count, erased.body.erasure.erasedCount], [false, 2, 2]);
  const left = await server.api.get('/api/v2/mail');
  assert.deepEqual(
    left.body.emails.map((email: { from: string }) => email.from),
    ['bystander@sender.test'],
  );
  const audit = await server.api.get('/api/v2/mail/erasures');
  assert.deepEqual(
    audit.body.erasures.map((record: { id: string; erasedCount: number }) => [record.id, record.erasedCount]),
    [[erased.body.erasure.id, 2]],
  );
});

test('kill -9 with the erased blobs still queued for deletion: the next start deletes them, and only them', async () => {
  await server.stop('SIGKILL');
  assert.deepEqual(await storedBlobs(), [...erasedBlobs, keptBlob].sort(), 'the store never answered the deletions');
  proxy.restore();

  server = await startMailroom(installation.env, API_KEY);
  // RETENTION_SWEEP_SECONDS is ten minutes: only the start itself can have deleted them.
  let blobs = await storedBlobs();
  for (let look = 0; look < 150 && blobs.length > 1; look++) {
    await new Promise((resolve) => setTimeout(resolve, 100));
    blobs = await storedBlobs();
  }
  assert.deepEqual(blobs, [keptBlob]);
  const kept = await server.api.get('/api/v2/mail');
  const raw = await fetch(`${server.httpUrl}/api/v2/mail/${kept.body.emails[0].id}/raw`, {
    headers: { authorization: `Bearer ${API_KEY}` },
  });
  assert.equal(raw.status, 200);
  assert.match(await raw.text(), /^Return-Path: <bystander@sender\.test>/);
  assert.equal(await server.stop('SIGTERM'), 0);
});
