import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import { once } from 'node:events';
import { readdirSync, readlinkSync } from 'node:fs';
import { appendFile, mkdir, mkdtemp, readdir, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { BlobNotFound, type BlobStore, openFsBlobStore } from '../../src/blobs/index.ts';
import { eventually } from '../helpers/eventually.ts';
import { hasPrlimit } from '../helpers/system-tools.ts';

let root: string;

before(async () => {
  root = await mkdtemp(join(tmpdir(), 'mailroom-fs-blobs-'));
});
after(async () => {
  await rm(root, { recursive: true, force: true });
});

async function read(store: BlobStore, key: string): Promise<string> {
  return Buffer.concat(await (await store.get(key)).toArray()).toString();
}

async function listed(store: BlobStore, prefix = 'raw/'): Promise<string[]> {
  const keys: string[] = [];
  for await (const blob of store.list(prefix)) keys.push(blob.key);
  return keys;
}

async function files(dir: string): Promise<string[]> {
  return (await readdir(join(root, dir), { recursive: true })).sort();
}

/** This process's open descriptors, each with the path it links to; the listing's own is left out. */
function openDescriptors(): Array<{ fd: number; path: string }> {
  const dir = `/proc/${process.pid}/fd`;
  return readdirSync(dir).flatMap((fd) => {
    try {
      const path = readlinkSync(join(dir, fd));
      return path === dir ? [] : [{ fd: Number(fd), path }];
    } catch {
      return []; // closed since the directory was read
    }
  });
}

function lowestFreeDescriptor(): number {
  const open = new Set(openDescriptors().map(({ fd }) => fd));
  let fd = 0;
  while (open.has(fd)) fd++;
  return fd;
}

const openDescriptorsUnder = (dir: string) => openDescriptors().filter(({ path }) => path.startsWith(`${dir}/`));

/**
 * A way to restore this process's limit of open files once lowered: a process started beforehand, since starting one
 * takes descriptors the lowered limit may not leave.
 */
async function lowerableDescriptorLimit() {
  const soft = execFileSync('prlimit', [`--pid=${process.pid}`, '--nofile', '--output=SOFT', '--noheadings'])
    .toString()
    .trim();
  const restorer = spawn('sh', ['-c', `read line; exec prlimit --pid=${process.pid} --nofile=${soft}:`], {
    stdio: ['pipe', 'ignore', 'ignore'],
  });
  await once(restorer, 'spawn');
  return {
    async restore() {
      restorer.stdin!.end('\n');
      const [code] = await once(restorer, 'exit');
      assert.equal(code, 0);
    },
  };
}

describe('filesystem blob store (segment files)', () => {
  test('concurrent puts land in one segment, each under its own key, and read back byte for byte', async () => {
    const store = await openFsBlobStore(join(root, 'concurrent'));
    const bodies = Array.from({ length: 40 }, (_, i) => [Buffer.from(`Received: ${i}\r\n`), Buffer.from(`body ${i}`)]);
    const stored = await Promise.all(bodies.map((chunks, i) => store.put(`raw/2026/11/24/msg_${i}.eml`, chunks)));
    for (const [i, blob] of stored.entries()) {
      assert.match(blob.key, /^raw\/2026\/11\/24\/seg_[0-9a-z]{26}\.seg\/\d+-\d+$/);
      assert.equal(blob.size, Buffer.concat(bodies[i]!).length);
      assert.equal(await read(store, blob.key), `Received: ${i}\r\nbody ${i}`);
    }
    assert.equal(new Set(stored.map((blob) => blob.key)).size, 40);
    assert.equal((await files('concurrent/raw/2026/11/24')).length, 1);
    assert.deepEqual((await listed(store)).sort(), stored.map((blob) => blob.key).sort());
    assert.deepEqual(store.location(stored[0]!.key), { bucketName: 'fs', objectKey: stored[0]!.key });
    await store.close();
  });

  test('a byte range reads inside the blob only, never into the next record; an empty blob reads empty', async () => {
    const store = await openFsBlobStore(join(root, 'ranges'));
    const first = await store.put('raw/2026/11/24/msg_a.eml', [Buffer.from('0123456789')]);
    await store.put('raw/2026/11/24/msg_b.eml', [Buffer.from('abcdefghij')]);
    const slice = async (start: number, end: number) =>
      Buffer.concat(await (await store.getRange(first.key, start, end)).toArray()).toString();
    assert.equal(await slice(2, 5), '2345');
    assert.equal(await slice(8, 100), '89');
    assert.equal(await slice(10, 20), '');
    const empty = await store.put('raw/2026/11/24/msg_c.eml', [Buffer.alloc(0)]);
    assert.equal(await read(store, empty.key), '');
    await store.close();
  });

  test('a blob for another day starts a segment in that day', async () => {
    const store = await openFsBlobStore(join(root, 'days'));
    const monday = await store.put('raw/2026/11/23/msg_a.eml', [Buffer.from('monday')]);
    const tuesday = await store.put('raw/2026/11/24/msg_b.eml', [Buffer.from('tuesday')]);
    assert.ok(monday.key.startsWith('raw/2026/11/23/seg_'));
    assert.ok(tuesday.key.startsWith('raw/2026/11/24/seg_'));
    assert.equal(await read(store, monday.key), 'monday');
    assert.equal(await read(store, tuesday.key), 'tuesday');
    assert.deepEqual(await listed(store, 'raw/2026/11/23/'), [monday.key]);
    await store.close();
  });

  test('a deleted blob is not found and not listed; its neighbours stay', async () => {
    const store = await openFsBlobStore(join(root, 'delete'));
    const kept = await store.put('raw/2026/11/24/msg_a.eml', [Buffer.from('kept')]);
    const gone = await store.put('raw/2026/11/24/msg_b.eml', [Buffer.from('gone')]);
    await store.delete(gone.key);
    await store.delete(gone.key);
    await assert.rejects(store.get(gone.key), BlobNotFound);
    assert.deepEqual(await listed(store), [kept.key]);
    assert.equal(await read(store, kept.key), 'kept');
    await assert.rejects(store.get(`${kept.key.split('/').slice(0, -1).join('/')}/3-4`), BlobNotFound);
    await store.close();
  });

  test('a segment of an earlier run is removed once all its blobs are deleted, and only then', async () => {
    const dir = join(root, 'earlier');
    const earlier = await openFsBlobStore(dir);
    const old = await Promise.all(
      ['a', 'b', 'c'].map((name) => earlier.put(`raw/2026/11/24/msg_${name}.eml`, [Buffer.from(name)])),
    );
    await earlier.close();

    const store = await openFsBlobStore(dir);
    const current = await store.put('raw/2026/11/24/msg_d.eml', [Buffer.from('d')]);
    await store.delete(old[0]!.key);
    await store.delete(old[1]!.key);
    assert.equal((await files('earlier/raw/2026/11/24')).length, 2);
    await store.delete(old[2]!.key);
    const left = await files('earlier/raw/2026/11/24');
    assert.deepEqual(left, [`${current.key.split('/')[4]}`]);
    await store.close();
  });

  test("this run's segment is removed once all its blobs are deleted (expiry reclaims space); puts go on", async () => {
    const store = await openFsBlobStore(join(root, 'current'));
    const first = await Promise.all(
      ['a', 'b'].map((name) => store.put(`raw/2026/11/24/msg_${name}.eml`, [Buffer.from(name)])),
    );
    await store.delete(first[0]!.key);
    assert.equal((await files('current/raw/2026/11/24')).length, 1);
    await store.delete(first[1]!.key);
    assert.deepEqual(await files('current/raw/2026/11/24'), []);
    const next = await store.put('raw/2026/11/24/msg_c.eml', [Buffer.from('c')]);
    assert.notEqual(next.key.split('/')[4], first[0]!.key.split('/')[4]);
    assert.equal(await read(store, next.key), 'c');
    assert.deepEqual(await listed(store), [next.key]);
    await store.close();
  });

  test('a segment with a put still being written is kept when its other blobs are deleted', async () => {
    const store = await openFsBlobStore(join(root, 'in-flight'));
    const stored = await store.put('raw/2026/11/24/msg_a.eml', [Buffer.from('a')]);
    const writing = store.put('raw/2026/11/24/msg_b.eml', [Buffer.from('b')]);
    await store.delete(stored.key);
    const pending = await writing;
    assert.equal(pending.key.split('/')[4], stored.key.split('/')[4]);
    assert.equal(await read(store, pending.key), 'b');
    assert.equal((await files('in-flight/raw/2026/11/24')).length, 1);
    await store.close();
  });

  test('a torn record at the end of a segment (a crash mid-write) ends the listing and disturbs no other blob', async () => {
    const dir = join(root, 'torn');
    const crashed = await openFsBlobStore(dir);
    const whole = await crashed.put('raw/2026/11/24/msg_a.eml', [Buffer.from('whole')]);
    await crashed.close();
    const segment = join(dir, whole.key.split('/').slice(0, -1).join('/'));
    const header = Buffer.alloc(8);
    header.write('MRB1');
    header.writeUInt32LE(1000, 4);
    await appendFile(segment, Buffer.concat([header, Buffer.from('only part')]));

    const store = await openFsBlobStore(dir);
    assert.deepEqual(await listed(store), [whole.key]);
    assert.equal(await read(store, whole.key), 'whole');
    const next = await store.put('raw/2026/11/24/msg_b.eml', [Buffer.from('next')]);
    assert.notEqual(next.key.split('/')[4], whole.key.split('/')[4]);
    assert.equal(await read(store, next.key), 'next');
    await store.close();
  });

  test('a new segment whose directory entry cannot be made durable (no file descriptor left) is closed at once, not left open for the garbage collector, whose close would end the process', {
    skip: !hasPrlimit && 'needs prlimit',
  }, async () => {
    const dir = join(root, 'descriptors');
    const store = await openFsBlobStore(dir);
    const { restore } = await lowerableDescriptorLimit();
    // One descriptor is left: the parent directory's sync takes it and gives it back, the segment's file takes it,
    // and the sync of the segment's directory finds none.
    execFileSync('prlimit', [`--pid=${process.pid}`, `--nofile=${lowestFreeDescriptor() + 1}:`]);
    try {
      await assert.rejects(store.put('raw/2026/11/29/msg_a.eml', [Buffer.from('a')]), { code: 'EMFILE' });
    } finally {
      await restore();
    }
    assert.deepEqual(openDescriptorsUnder(dir), []);
    const stored = await store.put('raw/2026/11/29/msg_b.eml', [Buffer.from('b')]);
    assert.equal(await read(store, stored.key), 'b');
    await store.close();
  });

  test('a segment is written 1 MiB ahead with zeros, so the next puts do not grow the file; closed, it ends with its last record', async () => {
    const dir = join(root, 'runway');
    const store = await openFsBlobStore(dir);
    const first = await store.put('raw/2026/11/24/msg_a.eml', [Buffer.from('first')]);
    const segment = join(dir, first.key.split('/').slice(0, -1).join('/'));
    const firstEnd = 8 + 'first'.length;
    await eventually(async () => (await stat(segment)).size === firstEnd + 1024 * 1024, 'the zeros written ahead');
    const second = await store.put('raw/2026/11/24/msg_b.eml', [Buffer.from('second')]);
    assert.equal((await stat(segment)).size, firstEnd + 1024 * 1024);
    assert.deepEqual(await listed(store), [first.key, second.key]);
    assert.equal(await read(store, second.key), 'second');
    await store.close();
    assert.equal((await stat(segment)).size, firstEnd + 8 + 'second'.length);
  });

  test('a segment left with its zeros (a crash before it was closed) lists and reads its records only; puts go on in a new one', async () => {
    const dir = join(root, 'runway-crash');
    const crashed = await openFsBlobStore(dir);
    const stored = await crashed.put('raw/2026/11/24/msg_a.eml', [Buffer.from('stored')]);
    const segment = join(dir, stored.key.split('/').slice(0, -1).join('/'));
    await eventually(async () => (await stat(segment)).size > 1024 * 1024, 'the zeros written ahead');

    const store = await openFsBlobStore(dir);
    assert.deepEqual(await listed(store), [stored.key]);
    assert.equal(await read(store, stored.key), 'stored');
    const next = await store.put('raw/2026/11/24/msg_b.eml', [Buffer.from('next')]);
    assert.notEqual(next.key.split('/')[4], stored.key.split('/')[4]);
    assert.deepEqual((await listed(store)).sort(), [stored.key, next.key].sort());
    await store.close();
    await crashed.close();
  });

  test('a blob stored as a file of its own (the earlier layout) still reads, lists and deletes', async () => {
    const dir = join(root, 'files');
    await mkdir(join(dir, 'raw/2026/11/20'), { recursive: true });
    await writeFile(join(dir, 'raw/2026/11/20/msg_old.eml'), 'Subject: old\r\n\r\nold layout');
    const store = await openFsBlobStore(dir);
    const key = 'raw/2026/11/20/msg_old.eml';
    assert.deepEqual(await listed(store), [key]);
    assert.equal(await read(store, key), 'Subject: old\r\n\r\nold layout');
    assert.equal(Buffer.concat(await (await store.getRange(key, 0, 6)).toArray()).toString(), 'Subject');
    await store.delete(key);
    await assert.rejects(store.get(key), BlobNotFound);
    await store.close();
  });
});
