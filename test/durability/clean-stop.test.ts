import assert from 'node:assert/strict';
import { access } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { openFsBlobStore } from '../../src/blobs/index.ts';
import { type MailroomProcess, startMailroom } from '../delivery/processes.ts';
import { rawBlobKeys } from '../helpers/blobs.ts';
import { type DnsServer, startDnsServer } from '../helpers/dns-server.ts';
import { createVerifiedDomain } from '../helpers/domains.ts';
import { createInstallation } from '../helpers/process.ts';
import { sendMail } from '../helpers/smtp.ts';
import { createAddress } from '../smtp/mail-setup.ts';

const API_KEY = 'mr_test_clean_stop_key_0123456789';

let dns: DnsServer;
let installation: Awaited<ReturnType<typeof createInstallation>>;
let server: MailroomProcess | undefined;

before(async () => {
  dns = await startDnsServer();
  installation = await createInstallation({ DNS_SERVERS: dns.address, MAILROOM_API_KEY: API_KEY });
});
after(async () => {
  await server?.stop('SIGKILL');
  await installation.remove();
  await dns.close();
});

const marker = () => join(installation.dataDir, 'ingest-clean-stop');
const exists = (path: string) =>
  access(path).then(
    () => true,
    () => false,
  );

/** Every raw message key the installation's filesystem store holds, read while the server may be running. */
async function blobKeys(): Promise<string[]> {
  const store = await openFsBlobStore(join(installation.dataDir, 'blobs'));
  const keys = await rawBlobKeys(store);
  await store.close();
  return keys;
}

test('a clean stop spares the next start the search for orphan blobs; after a crash the search runs', async () => {
  server = await startMailroom(installation.env, API_KEY);
  const domain = await createVerifiedDomain(server.api, dns, 'clean-stop.test');
  await createAddress(server.api, 'inbox@clean-stop.test', domain.id);
  const sent = await sendMail({ port: server.smtpPort, to: 'inbox@clean-stop.test', subject: 'kept' });
  assert.equal(sent.code, 250);
  const stored = await blobKeys();
  assert.equal(stored.length, 1);

  assert.equal(await server.stop('SIGTERM'), 0);
  assert.ok(await exists(marker()), 'a clean stop leaves the marker');

  // A blob no row refers to, as a crash between a blob's write and its commit would leave.
  const store = await openFsBlobStore(join(installation.dataDir, 'blobs'));
  const today = new Date().toISOString().slice(0, 10).replaceAll('-', '/');
  const { key: orphan } = await store.put(`raw/${today}/orphan.eml`, [Buffer.from('Subject: orphan\r\n\r\n')]);
  await store.close();

  // After the clean stop nothing is looked for (so the planted orphan stays), and the marker is taken.
  server = await startMailroom(installation.env, API_KEY);
  assert.equal(await exists(marker()), false, 'the start takes the marker');
  assert.deepEqual(await blobKeys(), [...stored, orphan].sort());

  // A crash leaves no marker: the next start looks for orphans and removes the one, keeping the stored message's.
  assert.equal(await server.stop('SIGKILL'), null);
  assert.equal(await exists(marker()), false);
  server = await startMailroom(installation.env, API_KEY);
  assert.deepEqual(await blobKeys(), stored);
  assert.equal(await server.stop('SIGTERM'), 0);
  server = undefined;
});
