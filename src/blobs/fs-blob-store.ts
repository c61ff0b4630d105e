import { mkdir, open, readdir, rm, stat, unlink } from 'node:fs/promises';
import { dirname, join, relative, sep } from 'node:path';
import type { Readable } from 'node:stream';
import { assertSafeKey, type BlobBody, BlobNotFound, type BlobStore, type ListedBlob } from './blob-store.ts';

/**
 * Blobs as files under one directory. A put creates the file under its final name, fsyncs it and fsyncs its
 * directory (so the entry itself is durable), the two in parallel; only then does it resolve. Directory fsyncs are
 * shared: one that starts after a file was created covers it, so concurrent puts into one directory share one.
 * A crash mid-put can leave a partial file, but never one a stored email refers to (rows are committed only after
 * put resolved), and ingest's start-up recovery deletes blobs that no row refers to.
 */
export async function openFsBlobStore(root: string): Promise<BlobStore> {
  await mkdir(root, { recursive: true });
  const knownDirs = new Set<string>();
  const syncedDirs = new Set<string>();
  const dirSyncs = new Map<string, DirSync>();

  const pathOf = (key: string) => {
    assertSafeKey(key);
    return join(root, key);
  };

  async function ensureDir(dir: string) {
    if (knownDirs.has(dir)) return;
    await mkdir(dir, { recursive: true });
    knownDirs.add(dir);
  }

  async function syncDir(dir: string) {
    const handle = await open(dir, 'r');
    try {
      await handle.sync();
    } finally {
      await handle.close();
    }
  }

  async function openForRead(key: string, options: { start?: number; end?: number } = {}): Promise<Readable> {
    const path = pathOf(key);
    try {
      const handle = await open(path, 'r');
      return handle.createReadStream(options);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') throw new BlobNotFound(key);
      throw error;
    }
  }

  return {
    kind: 'fs',
    async put(key: string, body: BlobBody) {
      const path = pathOf(key);
      const dir = dirname(path);
      await ensureDir(dir);
      if (!syncedDirs.has(dir)) {
        // A new directory's own entry must be durable before files in it are relied on.
        await syncDir(dirname(dir));
        syncedDirs.add(dir);
      }
      let size = 0;
      const handle = await open(path, 'wx');
      let sync = dirSyncs.get(dir);
      if (!sync) {
        sync = new DirSync(() => syncDir(dir));
        dirSyncs.set(dir, sync);
      }
      // The entry exists from the open on, so the directory fsync can run while the data is written and fsynced.
      const entryDurable = sync.covering();
      entryDurable.catch(() => {});
      try {
        if (Buffer.isBuffer(body) || Array.isArray(body)) {
          const chunks = Buffer.isBuffer(body) ? [body] : (body as readonly Buffer[]);
          for (const chunk of chunks) size += chunk.length;
          await handle.writev(chunks as Buffer[]);
        } else {
          for await (const chunk of body as Readable) {
            const buffer = Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk);
            size += buffer.length;
            await handle.write(buffer);
          }
        }
        await handle.sync();
      } catch (error) {
        await handle.close();
        await unlink(path).catch(() => {});
        throw error;
      }
      await handle.close();
      await entryDurable;
      return { size };
    },
    get: (key) => openForRead(key),
    getRange: (key, start, end) => openForRead(key, { start, end }),
    async delete(key) {
      await rm(pathOf(key), { force: true });
    },
    async *list(prefix: string): AsyncIterable<ListedBlob> {
      const base = join(root, prefix.replace(/\/+$/, ''));
      let entries: string[];
      try {
        entries = (await readdir(base, { recursive: true, withFileTypes: true }))
          .filter((entry) => entry.isFile())
          .map((entry) => join(entry.parentPath, entry.name));
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === 'ENOENT') return;
        throw error;
      }
      for (const path of entries) {
        const key = relative(root, path).split(sep).join('/');
        const info = await stat(path).catch(() => undefined);
        if (info) yield { key, lastModified: info.mtime };
      }
    },
    location: (key) => ({ bucketName: 'fs', objectKey: key }),
    async close() {},
  };
}

/**
 * Coalesces fsyncs of one directory. `covering()` resolves after an fsync that started after the call, which makes
 * every entry created before the call durable; callers arriving while one runs share the next one.
 */
class DirSync {
  private readonly sync: () => Promise<void>;
  private running: Promise<void> | undefined;
  private next: Promise<void> | undefined;

  constructor(sync: () => Promise<void>) {
    this.sync = sync;
  }

  covering(): Promise<void> {
    if (!this.running) {
      this.running = this.sync().finally(() => {
        this.running = undefined;
      });
      return this.running;
    }
    if (!this.next) {
      this.next = this.running
        .catch(() => {})
        .then(() => {
          this.next = undefined;
          return this.covering();
        });
    }
    return this.next;
  }
}
