import type { Readable } from 'node:stream';
import { NotFound } from '../core/index.ts';

/** What the store reports about a blob once it is durably written. */
export interface StoredBlob {
  /** The key the blob is read back by. */
  key: string;
  size: number;
}

/** Where a blob lives, in the words of the email resource's `processing.s3Info`. */
export interface BlobLocation {
  /** The S3 bucket, or `fs` for the filesystem store. */
  bucketName: string;
  objectKey: string;
}

export interface ListedBlob {
  key: string;
  lastModified: Date;
}

/**
 * Raw messages by key. `put` returns only once the bytes are durable (on disk, or an S3 PUT that answered), so a
 * caller may acknowledge what it stored. Keys are relative paths.
 */
export interface BlobStore {
  readonly kind: 'fs' | 's3';
  /**
   * Stores the bytes `chunks` hold, in order. `name` is where the blob would be as a file of its own, such as
   * `raw/2026/11/22/msg_x.eml`: S3 stores it under that key, the filesystem as a record of a segment file in that
   * directory. The answer's `key` is the one to read it back by.
   */
  put(name: string, chunks: readonly Buffer[]): Promise<StoredBlob>;
  /** The blob's bytes; throws BlobNotFound if there is none. */
  get(key: string): Promise<Readable>;
  /** Bytes `start` to `end` inclusive, as an HTTP Range reads them. */
  getRange(key: string, start: number, end: number): Promise<Readable>;
  /** Removes the blob; removing a missing blob is not an error. */
  delete(key: string): Promise<void>;
  /** Every blob whose key starts with `prefix`, in no particular order. */
  list(prefix: string): AsyncIterable<ListedBlob>;
  location(key: string): BlobLocation;
  close(): Promise<void>;
}

/** A NotFound, so a capability that may not import blobs (delivery) still tells a lost message from a failure. */
export class BlobNotFound extends NotFound {
  readonly key: string;
  constructor(key: string) {
    super(`Blob not found: ${key}`);
    this.key = key;
  }
}

/** Keys come from ingest, never from clients, but a key that could escape the store's root is refused anyway. */
export function assertSafeKey(key: string): void {
  if (!/^[A-Za-z0-9._-]+(\/[A-Za-z0-9._-]+)*$/.test(key) || key.split('/').some((part) => part === '..')) {
    throw new Error(`Unsafe blob key: ${key}`);
  }
}
