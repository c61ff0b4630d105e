import type { BlobConfig } from '../config/index.ts';
import type { BlobStore } from './blob-store.ts';
import { openFsBlobStore } from './fs-blob-store.ts';

export {
  type BlobLocation,
  BlobNotFound,
  type BlobStore,
  type ListedBlob,
  type StoredBlob,
} from './blob-store.ts';
export { backUpFsBlobStore } from './fs-blob-backup.ts';
export { openFsBlobStore } from './fs-blob-store.ts';

/** The store BLOB_STORE selects: a directory under DATA_DIR, or an S3 bucket and prefix. */
export async function openBlobStore(config: BlobConfig): Promise<BlobStore> {
  if (config.kind === 'fs') return openFsBlobStore(config.dir);
  // Loaded only here, so filesystem installations do not hold the AWS SDK in their heap.
  const { openS3BlobStore } = await import('./s3-blob-store.ts');
  return openS3BlobStore({
    bucket: config.bucket,
    prefix: config.prefix,
    endpoint: config.endpoint,
    region: config.region,
    timeoutMs: config.timeoutMs,
  });
}
