import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdir, mkdtemp, readdir, rm, stat, statfs, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { after, before, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { startTestApp, TEST_DATABASE_URL, type TestApp } from '../helpers/app.ts';
import { type DnsServer, startDnsServer } from '../helpers/dns-server.ts';
import { createVerifiedDomain } from '../helpers/domains.ts';
import { apiClient } from '../helpers/http.ts';
import { sendMail } from '../helpers/smtp.ts';
import { createAddress } from '../smtp/mail-setup.ts';

const ADDRESS = 'inbox@full-disk.test';
/** What the API answers while a store cannot take the request. */
const UNAVAILABLE = { error: 'Service temporarily unavailable, try again shortly' };

/** DATA_DIR on a filesystem of its own, 16 MiB, which the tests fill; mounting one takes root. */
const dataDir = await mkdtemp(join(tmpdir(), 'mailroom-disk-full-'));
const mounted = (() => {
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=16m', 'tmpfs', dataDir], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
})();

let dns: DnsServer;
let server: TestApp;

before(async () => {
  if (!mounted) return;
  dns = await startDnsServer();
  server = await startTestApp({ DATA_DIR: dataDir, DNS_SERVERS: dns.address });
  const api = apiClient(server.baseUrl, server.apiKey);
  const domain = await createVerifiedDomain(api, dns, 'full-disk.test');
  await createAddress(api, ADDRESS, domain.id);
});
after(async () => {
  try {
    await server?.close();
    await dns?.close();
  } finally {
    if (mounted) execFileSync('umount', [dataDir]);
    await rm(dataDir, { recursive: true, force: true });
  }
});

/**
 * Takes every free byte of the filesystem at `dir` with its file `filler`, returned; the WALs of the SQLite databases
 * named `databases` are emptied first, so their next write needs room. A write of the server's between the two (the
 * search indexer's, say) would leave a WAL that a later checkpoint lets the next write reuse without room, so the
 * filling is done again until every WAL is still empty once the disk is full.
 */
async function fillDisk(dir: string, databases: readonly string[]): Promise<string> {
  const filler = join(dir, 'filler');
  for (let round = 1; ; round++) {
    await rm(filler, { force: true });
    for (const file of databases) await emptyWal(join(dir, file));
    const { bavail, bsize } = await statfs(dir);
    await writeFile(filler, Buffer.alloc(bavail * bsize)).catch((error: NodeJS.ErrnoException) => {
      if (error.code !== 'ENOSPC') throw error;
    });
    const walBytes = await Promise.all(databases.map((file) => fileBytes(join(dir, `${file}-wal`))));
    if (walBytes.every((bytes) => bytes === 0)) return filler;
    assert.ok(round < 20, `the WALs kept being written to while the disk was filled: ${walBytes.join(', ')} bytes`);
  }
}

async function fileBytes(path: string): Promise<number> {
  const found = await stat(path).catch((error: NodeJS.ErrnoException) => {
    if (error.code === 'ENOENT') return { size: 0 };
    throw error;
  });
  return found.size;
}

/**
 * Truncates the WAL of the database at `path` to nothing. While a reader of the server's is in the WAL, the checkpoint
 * answers busy and leaves the file at its size, for the next write to reuse without new room: it is tried again, with
 * the event loop free, for the server's own connection may be the reader.
 */
async function emptyWal(path: string) {
  const database = new DatabaseSync(path);
  try {
    const checkpoint = () => ({ ...database.prepare('PRAGMA wal_checkpoint(TRUNCATE)').get() });
    let result = checkpoint();
    for (let tries = 0; result.busy !== 0 && tries < 500; tries++) {
      await sleep(20);
      result = checkpoint();
    }
    assert.deepEqual(result, { busy: 0, log: 0, checkpointed: 0 });
  } finally {
    database.close();
  }
}

async function call(method: string, path: string, body?: unknown) {
  const response = await fetch(`${server.baseUrl}${path}`, {
    method,
    headers: {
      authorization: `Bearer ${server.apiKey}`,
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: response.status, retryAfter: response.headers.get('retry-after'), body: await response.json() };
}

test('DATA_DIR full: SMTP answers 451 and the API 503 with Retry-After, logged as an outage, not a bug; both recover once space is freed, and the refused messages leave no file', {
  skip: !mounted && 'mounting a tmpfs needs root',
}, async () => {
  const stored = await sendMail({ port: server.smtpPort, to: ADDRESS, subject: 'Before', text: 'word before' });
  assert.equal(stored.code, 250, stored.response);
  const emailId = stored.queuedIds[0]!;
  const filler = await fillDisk(dataDir, TEST_DATABASE_URL ? [] : ['mailroom.sqlite', 'mailroom-search.sqlite']);

  // A sender retrying: each try meets the full disk. The message is larger than the zeros written ahead of the
  // segment's records (1 MiB), which a smaller one would still fit in.
  for (let retry = 0; retry < 3; retry++) {
    const refused = await sendMail({
      port: server.smtpPort,
      to: ADDRESS,
      subject: 'Full',
      text: 'word '.repeat(300_000),
    });
    assert.equal(refused.response, '451 4.3.0 Temporary failure, please try again later');
  }
  if (!TEST_DATABASE_URL) {
    // Writes to SQLite: one statement, and a transaction (a domain and its DNS records), whose COMMIT SQLite refuses.
    for (const [method, path, body] of [
      ['PATCH', `/api/v2/mail/${emailId}`, { isRead: true }],
      ['POST', '/api/v2/domains', { domain: 'another.test' }],
    ] as const) {
      assert.deepEqual(await call(method, path, body), { status: 503, retryAfter: '5', body: UNAVAILABLE }, path);
    }
  }

  await rm(filler);
  const after = await sendMail({ port: server.smtpPort, to: ADDRESS, subject: 'After', text: 'word after' });
  assert.equal(after.code, 250, after.response);
  const marked = await call('PATCH', `/api/v2/mail/${emailId}`, { isRead: true });
  assert.equal(marked.status, 200, JSON.stringify(marked.body));
  const found = await call('GET', '/api/v2/mail?search=word');
  assert.deepEqual(
    found.body.emails.map((email: { subject: string }) => email.subject),
    ['After', 'Before'],
  );
  // The refused tries left no segment file behind: the files are those of the two messages stored.
  const segments = new Set<string>();
  for (const id of [emailId, after.queuedIds[0]!]) {
    const { objectKey } = (await call('GET', `/api/v2/mail/${id}`)).body.processing.s3Info;
    segments.add(objectKey.slice(0, objectKey.lastIndexOf('/')));
  }
  const files = await readdir(join(dataDir, 'blobs'), { recursive: true, withFileTypes: true });
  assert.deepEqual(
    files
      .filter((entry) => entry.isFile())
      .map((entry) => relative(join(dataDir, 'blobs'), join(entry.parentPath, entry.name)))
      .sort(),
    [...segments].sort(),
  );
  assert.deepEqual(server.loggedErrors(), []);
});

/**
 * Runs `work` on an app whose DATA_DIR and blob directory are two filesystems of 16 MiB each, with DATA_DIR's filled
 * once the WAL files of `full` are emptied (so their next write needs room) while the blobs keep theirs.
 */
async function withDataDirFull(
  domain: string,
  full: readonly string[],
  work: (app: TestApp, filler: string) => Promise<void>,
) {
  const dir = await mkdtemp(join(tmpdir(), 'mailroom-data-full-'));
  const mounts: string[] = [];
  let app: TestApp | undefined;
  try {
    for (const mount of [dir, join(dir, 'blobs')]) {
      await mkdir(mount, { recursive: true });
      execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=16m', 'tmpfs', mount]);
      mounts.unshift(mount);
    }
    app = await startTestApp({ DATA_DIR: dir, DNS_SERVERS: dns.address });
    const api = apiClient(app.baseUrl, app.apiKey);
    await createAddress(api, `inbox@${domain}`, (await createVerifiedDomain(api, dns, domain)).id);
    await work(app, await fillDisk(dir, full));
  } finally {
    try {
      await app?.close();
    } finally {
      for (const mount of mounts) execFileSync('umount', [mount]);
      await rm(dir, { recursive: true, force: true });
    }
  }
}

const ONLY_SQLITE =
  (!mounted || TEST_DATABASE_URL !== undefined) && "mounting a tmpfs needs root; the file is SQLite's";

test("the database's disk full when ingest commits (blobs on a disk of their own): SMTP answers 451, logged as an outage, and stores the mail once space is freed", {
  skip: ONLY_SQLITE,
}, async () => {
  await withDataDirFull('db-full.test', ['mailroom.sqlite', 'mailroom-search.sqlite'], async (app, filler) => {
    const refused = await sendMail({ port: app.smtpPort, to: 'inbox@db-full.test', text: 'word '.repeat(20_000) });
    assert.equal(refused.response, '451 4.3.0 Temporary failure, please try again later');
    await rm(filler);
    const sent = await sendMail({ port: app.smtpPort, to: 'inbox@db-full.test', text: 'word' });
    assert.equal(sent.code, 250, sent.response);
    const found = await apiClient(app.baseUrl, app.apiKey).get('/api/v2/mail');
    assert.deepEqual(
      found.body.emails.map((email: { id: string }) => email.id),
      sent.queuedIds,
    );
    assert.deepEqual(app.loggedErrors(), []);
  });
});

test('the disk under the search index full while mail still arrives (blobs on a disk of their own): a search answers 503, and finds the mail once space is freed', {
  skip: ONLY_SQLITE,
}, async () => {
  await withDataDirFull('search-full.test', ['mailroom-search.sqlite'], async (app, filler) => {
    // The main database's WAL still has room for the rows; the search file has none to index them.
    const sent = await sendMail({ port: app.smtpPort, to: 'inbox@search-full.test', text: 'word' });
    assert.equal(sent.code, 250, sent.response);
    const searched = await fetch(`${app.baseUrl}/api/v2/mail?search=word`, {
      headers: { authorization: `Bearer ${app.apiKey}` },
    });
    assert.deepEqual(
      { status: searched.status, retryAfter: searched.headers.get('retry-after'), body: await searched.json() },
      { status: 503, retryAfter: '5', body: UNAVAILABLE },
    );
    await rm(filler);
    const found = await apiClient(app.baseUrl, app.apiKey).get('/api/v2/mail?search=word');
    assert.deepEqual(
      found.body.emails.map((email: { id: string }) => email.id),
      sent.queuedIds,
    );
    assert.deepEqual(app.loggedErrors(), []);
  });
});
