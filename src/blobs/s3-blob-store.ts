import { Readable } from 'node:stream';
import {
  DeleteObjectCommand,
  GetObjectCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  S3Client,
} from '@aws-sdk/client-s3';
import { assertSafeKey, BlobNotFound, type BlobStore, type ListedBlob, type StoredBlob } from './blob-store.ts';

export interface S3BlobStoreOptions {
  bucket: string;
  /** Key prefix inside the bucket, without slashes at either end; may be empty. */
  prefix: string;
  endpoint?: string;
  region: string;
  /**
   * How long a request may wait to connect, or go without a byte either way once connected, before it fails (and is
   * retried by the SDK): without it a store that stops answering holds SMTP's answer, API reads and shutdown forever.
   */
  timeoutMs: number;
  /** Explicit credentials (tests); otherwise the standard AWS chain (env, profile, instance role). */
  credentials?: { accessKeyId: string; secretAccessKey: string };
}

function isMissing(error: unknown): boolean {
  const e = error as { name?: string; $metadata?: { httpStatusCode?: number } };
  return e.name === 'NoSuchKey' || e.name === 'NotFound' || e.$metadata?.httpStatusCode === 404;
}

/**
 * Blobs as objects in an S3-compatible bucket. A PUT that answered 200 is durable by S3's contract. Checksums are
 * computed only when required: with the SDK's default a streamed body goes out `aws-chunked`, which some
 * S3-compatible servers store with its framing. Path-style addressing works with any endpoint.
 */
export function openS3BlobStore(options: S3BlobStoreOptions): BlobStore {
  const client = new S3Client({
    region: options.region,
    endpoint: options.endpoint,
    forcePathStyle: Boolean(options.endpoint),
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
    requestHandler: { connectionTimeout: options.timeoutMs, socketTimeout: options.timeoutMs },
    ...(options.credentials ? { credentials: options.credentials } : {}),
  });
  const base = options.prefix ? `${options.prefix}/` : '';
  const objectKey = (key: string) => {
    assertSafeKey(key);
    return `${base}${key}`;
  };

  async function read(key: string, range?: string): Promise<Readable> {
    try {
      const response = await client.send(
        new GetObjectCommand({ Bucket: options.bucket, Key: objectKey(key), Range: range }),
      );
      return response.Body as Readable;
    } catch (error) {
      if (isMissing(error)) throw new BlobNotFound(key);
      throw error;
    }
  }

  async function put(key: string, chunks: readonly Buffer[]): Promise<StoredBlob> {
    const length = chunks.reduce((sum, chunk) => sum + chunk.length, 0);
    await client.send(
      new PutObjectCommand({
        Bucket: options.bucket,
        Key: objectKey(key),
        Body: chunks.length === 1 ? chunks[0]! : Readable.from(chunks),
        ContentLength: length,
        ContentType: 'message/rfc822',
      }),
    );
    return { key, size: length };
  }

  return {
    kind: 's3',
    put,
    get: (key) => read(key),
    getRange: (key, start, end) => read(key, `bytes=${start}-${end}`),
    async delete(key) {
      await client.send(new DeleteObjectCommand({ Bucket: options.bucket, Key: objectKey(key) }));
    },
    async *list(prefix: string): AsyncIterable<ListedBlob> {
      let token: string | undefined;
      do {
        const page = await client.send(
          new ListObjectsV2Command({ Bucket: options.bucket, Prefix: `${base}${prefix}`, ContinuationToken: token }),
        );
        for (const item of page.Contents ?? []) {
          if (!item.Key) continue;
          yield { key: item.Key.slice(base.length), lastModified: item.LastModified ?? new Date(0) };
        }
        token = page.IsTruncated ? page.NextContinuationToken : undefined;
      } while (token);
    },
    location: (key) => ({ bucketName: options.bucket, objectKey: objectKey(key) }),
    async close() {
      client.destroy();
    },
  };
}
