import type { BlobStore } from '../../src/blobs/index.ts';

/** The key of every raw message the store holds, sorted. */
export async function rawBlobKeys(store: BlobStore): Promise<string[]> {
  const keys: string[] = [];
  for await (const blob of store.list('raw/')) keys.push(blob.key);
  return keys.sort();
}
