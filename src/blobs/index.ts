import type { BlobConfig } from '../config/index.ts';
import type { BlobStore } from './blob-store.ts';
import { openFsBlobStore } from './fs-blob-store.ts';
import { openS3BlobStore } from './s3-blob-store.ts';

export {
  type BlobLocation,
  BlobNotFound,
  type BlobStore,
  type ListedBlob,
  type StoredBlob,
} from './blob-store.ts';
export { openFsBlobStore } from './fs-blob-store.ts';
export { openS3BlobStore, type S3BlobStoreOptions } from './s3-blob-store.ts';

/** The store BLOB_STORE selects: a directory under DATA_DIR, or an S3 bucket and prefix. */
export async function openBlobStore(config: BlobConfig): Promise<BlobStore> {
  if (config.kind === 'fs') return openFsBlobStore(config.dir);
  return openS3BlobStore({
    bucket: config.bucket,
    prefix: config.prefix,
    endpoint: config.endpoint,
    region: config.region,
  });
}
