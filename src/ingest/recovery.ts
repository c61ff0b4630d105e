import { rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { BlobStore } from '../blobs/index.ts';
import type { Db } from '../db/index.ts';

export interface RecoveryOptions {
  /** Blobs younger than this may belong to a message another process is still ingesting; they are left alone. */
  olderThanMs: number;
  /** How many days of `raw/YYYY/MM/DD/` partitions to scan, counting today. */
  days?: number;
  now?: Date;
}

/**
 * Cleans what a crash can leave half-done. Ingest writes the blob before the transaction that references it, so a
 * crash between the two leaves a blob without a row: such a message was never acknowledged (250 comes only after
 * the commit), and its sender will retry. Those blobs are deleted. A committed row always has its blob, because the
 * blob was durable before the transaction began. Only recent day partitions are scanned, which bounds start-up time;
 * an older orphan wastes space but is otherwise harmless.
 */
export async function removeOrphanBlobs(db: Db, blobs: BlobStore, options: RecoveryOptions): Promise<string[]> {
  const now = options.now ?? new Date();
  const cutoff = now.getTime() - options.olderThanMs;
  const removed: string[] = [];
  for (let day = 0; day < (options.days ?? 3); day++) {
    const date = new Date(now.getTime() - day * 86_400_000);
    const prefix = `raw/${date.toISOString().slice(0, 10).replaceAll('-', '/')}/`;
    let batch: string[] = [];
    const flush = async () => {
      if (batch.length === 0) return;
      const referenced = await db
        .selectFrom('emails')
        .select('raw_blob_key')
        .where('raw_blob_key', 'in', batch)
        .execute();
      const kept = new Set(referenced.map((row) => row.raw_blob_key));
      for (const key of batch) {
        if (kept.has(key)) continue;
        await blobs.delete(key);
        removed.push(key);
      }
      batch = [];
    };
    for await (const blob of blobs.list(prefix)) {
      if (blob.lastModified.getTime() > cutoff) continue;
      batch.push(blob.key);
      if (batch.length >= 500) await flush();
    }
    await flush();
  }
  return removed;
}

/**
 * A file in the data directory saying that the last process using it stopped cleanly: ingest had drained, so every
 * blob it wrote was referenced by a committed row or deleted, and the next start need not look for orphans (which
 * reads every record of the last days' segments). The next start takes it (removes it) before it accepts mail, so
 * after a crash there is none and the orphans are looked for. Only meaningful for the filesystem store, which is one
 * process's alone; on S3 other processes may be ingesting, so recovery always runs there. Should the file outlive a
 * crash anyway (its removal not yet on disk), the cost is blobs left unreferenced, never a message lost.
 */
export function cleanStopMarker(dataDir: string) {
  const path = join(dataDir, 'ingest-clean-stop');
  return {
    async write(): Promise<void> {
      await writeFile(path, `${new Date().toISOString()}\n`);
    },
    /** Whether the last stop was clean; removes the marker. */
    async take(): Promise<boolean> {
      try {
        await rm(path);
        return true;
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === 'ENOENT') return false;
        throw error;
      }
    },
  };
}
