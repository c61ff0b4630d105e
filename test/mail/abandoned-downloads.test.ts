import assert from 'node:assert/strict';
import { readdirSync, readlinkSync } from 'node:fs';
import { connect } from 'node:net';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { type MailWorld, startMailWorld } from './setup.ts';

let world: MailWorld;
let emailId: string;

/** Files of the blob store this process holds open: the server runs in it, so these are the server's. */
function openBlobFiles(): number {
  const blobs = join(world.server.dataDir, 'blobs');
  let count = 0;
  for (const fd of readdirSync('/proc/self/fd')) {
    try {
      if (readlinkSync(`/proc/self/fd/${fd}`).startsWith(blobs)) count++;
    } catch {
      // Closed since the directory was read.
    }
  }
  return count;
}

/** Asks for `path` and hangs up: at once, or once the first bytes of the answer have arrived. */
async function abandon(path: string, when: 'at once' | 'after the first bytes') {
  const port = Number(new URL(world.server.baseUrl).port);
  const socket = connect(port, '127.0.0.1');
  socket.on('error', () => {});
  const closed = new Promise((resolve) => socket.once('close', resolve));
  socket.write(`GET ${path} HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer ${world.server.apiKey}\r\n\r\n`);
  if (when === 'after the first bytes') await new Promise((resolve) => socket.once('data', resolve));
  else await sleep(1);
  socket.destroy();
  await closed;
}

describe('attachment downloads the client abandons', () => {
  before(async () => {
    world = await startMailWorld(['files@abandon.test']);
    [emailId] = await world.deliver({
      to: 'files@abandon.test',
      attachments: [{ filename: 'big.bin', content: Buffer.alloc(3 * 1024 * 1024, 'a') }],
    });
  });
  after(() => world.close());

  test('let go of the stored message: the blob files open are those open before', async () => {
    // The segment being written stays open for the next message.
    const openBefore = openBlobFiles();
    for (let i = 0; i < 6; i++) {
      await abandon(`/api/v2/attachments/${emailId}/big.bin`, i % 2 === 0 ? 'at once' : 'after the first bytes');
    }
    // The rest of each message is read to its end once its reader is gone, which takes a moment.
    for (let wait = 0; wait < 100 && openBlobFiles() > openBefore; wait++) await sleep(50);
    assert.equal(openBlobFiles(), openBefore);
    const whole = await fetch(`${world.server.baseUrl}/api/v2/attachments/${emailId}/big.bin`, {
      headers: { authorization: `Bearer ${world.server.apiKey}` },
    });
    assert.equal((await whole.arrayBuffer()).byteLength, 3 * 1024 * 1024);
  });
});
