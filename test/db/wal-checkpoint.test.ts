import assert from 'node:assert/strict';
import { stat } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { TEST_DATABASE_URL, type TestApp } from '../helpers/app.ts';
import { type DnsServer, startDnsServer } from '../helpers/dns-server.ts';
import { sendMail } from '../helpers/smtp.ts';
import { startReceivingApp } from '../smtp/mail-setup.ts';

let dns: DnsServer;
let server: TestApp | undefined;

before(async () => {
  if (TEST_DATABASE_URL) return;
  dns = await startDnsServer();
  server = await startReceivingApp(dns, 'store@checkpoint.test');
});
after(async () => {
  await server?.close();
  await dns?.close();
});

const databaseFileSize = async () => (await stat(join(server!.dataDir, 'mailroom.sqlite'))).size;

/** Polls until `read` gives the same answer twice in a row, 200 ms apart; fails after 5 s. */
async function settled(read: () => Promise<number>): Promise<number> {
  const deadline = Date.now() + 5000;
  let last = await read();
  while (Date.now() < deadline) {
    await sleep(200);
    const now = await read();
    if (now === last) return now;
    last = now;
  }
  throw new Error(`still changing after 5 s (last ${last})`);
}

test('committed mail reaches the database file while Mailroom runs, long before the WAL is big enough for a connection to checkpoint it', {
  skip: TEST_DATABASE_URL ? 'SQLite only' : false,
}, async () => {
  const before = await settled(databaseFileSize);
  const bodyBytes = 20_000;
  for (let i = 0; i < 20; i++) {
    const sent = await sendMail({
      port: server!.smtpPort,
      to: 'store@checkpoint.test',
      raw: `From: a@sender.test\r\nTo: store@checkpoint.test\r\nSubject: Page ${i}\r\n\r\n${'word '.repeat(bodyBytes / 5)}\r\n`,
    });
    assert.equal(sent.ok, true, sent.response);
  }
  // 20 bodies of 20 KB are about 100 pages in the WAL: far below the 8,192 at which a connection checkpoints in its
  // own commit, so only the checkpointer's thread can have copied them into the database file.
  const deadline = Date.now() + 5000;
  let size = await databaseFileSize();
  while (size < before + 20 * bodyBytes && Date.now() < deadline) {
    await sleep(50);
    size = await databaseFileSize();
  }
  assert.ok(size >= before + 20 * bodyBytes, `database file grew by ${size - before} bytes`);
});
