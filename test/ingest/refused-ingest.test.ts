import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { TestApp } from '../helpers/app.ts';
import { rawBlobKeys } from '../helpers/blobs.ts';
import { type DnsServer, startDnsServer } from '../helpers/dns-server.ts';
import { sendMail } from '../helpers/smtp.ts';
import { startReceivingApp } from '../smtp/mail-setup.ts';

let dns: DnsServer;
let server: TestApp;

before(async () => {
  dns = await startDnsServer();
  server = await startReceivingApp(dns, 'store@refused.test');
});
after(async () => {
  const closed = await server.close().then(
    () => undefined,
    (error: Error) => error,
  );
  // The refused message is logged as an error, and nothing else may be.
  const logged = closed?.message.split('\n').slice(1).filter(Boolean) ?? [];
  assert.ok(logged.length > 0, 'the refusal was logged');
  for (const line of logged) assert.equal(JSON.parse(line).msg, 'ingest failed');
  await dns.close();
});

test('a message whose analysis cannot run is answered 451, and the blob already stored for it is deleted', async () => {
  // Stops ingest's threads as a shutdown does; SMTP still takes the message, and its blob is written while the
  // analysis request fails.
  await server.app.ingest.drain();
  const sent = await sendMail({
    port: server.smtpPort,
    to: 'store@refused.test',
    raw: 'From: a@sender.test\r\nTo: store@refused.test\r\nSubject: Refused\r\nMessage-ID: <refused@sender.test>\r\n\r\nBody\r\n',
  });
  assert.equal(sent.code, 451);
  assert.match(sent.response, /^451 4\.3\.0 /);
  // Before this was fixed, the 451 went out while the put was still running and its blob stayed; give such a put time
  // to land, so that this test would see it.
  await new Promise((resolve) => setTimeout(resolve, 200));
  assert.deepEqual(await rawBlobKeys(server.app.blobs), []);
  const rows = await server.app.database.db.selectFrom('emails').select('id').execute();
  assert.deepEqual(rows, []);
});
