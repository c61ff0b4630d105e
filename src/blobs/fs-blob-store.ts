import { createHash, randomBytes } from 'node:crypto';
import { mkdir, open, readdir, rename, rm, stat, unlink } from 'node:fs/promises';
import { dirname, join, relative, sep } from 'node:path';
import type { Readable } from 'node:stream';
import { assertSafeKey, type BlobBody, BlobNotFound, type BlobStore, type ListedBlob } from './blob-store.ts';

const TEMP_DIR = '.incoming';

/**
 * Blobs as files under one directory. A put writes a temporary file, fsyncs it, renames it into place and fsyncs the
 * directory, so a blob is either absent or complete after a crash. Temporary files left by a crash are removed
 * when the store opens: nothing else writes into this directory.
 */
export async function openFsBlobStore(root: string): Promise<BlobStore> {
  const tempDir = join(root, TEMP_DIR);
  await rm(tempDir, { recursive: true, force: true });
  await mkdir(tempDir, { recursive: true });
  const knownDirs = new Set<string>();

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
      const finalPath = pathOf(key);
      const tempPath = join(tempDir, `${randomBytes(12).toString('hex')}.tmp`);
      const hash = createHash('sha256');
      let size = 0;
      const handle = await open(tempPath, 'wx');
      try {
        if (Buffer.isBuffer(body) || Array.isArray(body)) {
          const chunks = Buffer.isBuffer(body) ? [body] : (body as readonly Buffer[]);
          for (const chunk of chunks) {
            hash.update(chunk);
            size += chunk.length;
          }
          await handle.writev(chunks as Buffer[]);
        } else {
          for await (const chunk of body as Readable) {
            const buffer = Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk);
            hash.update(buffer);
            size += buffer.length;
            await handle.write(buffer);
          }
        }
        await handle.sync();
      } catch (error) {
        await handle.close();
        await unlink(tempPath).catch(() => {});
        throw error;
      }
      await handle.close();
      const dir = dirname(finalPath);
      await ensureDir(dir);
      await rename(tempPath, finalPath);
      await syncDir(dir);
      return { size, sha256: hash.digest('hex') };
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
        if (key.startsWith(`${TEMP_DIR}/`)) continue;
        const info = await stat(path).catch(() => undefined);
        if (info) yield { key, lastModified: info.mtime };
      }
    },
    location: (key) => ({ bucketName: 'fs', objectKey: key }),
    async close() {},
  };
}
