import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CreateBucketCommand, S3Client } from '@aws-sdk/client-s3';
import S3rver from 's3rver';

export interface S3Server {
  /** The variables that point Mailroom's blob store at this server's bucket, credentials included. */
  env: Record<string, string>;
  close(): Promise<void>;
}

/**
 * An S3-compatible server (s3rver, from npm) on loopback with one bucket, for the blob store that several processes
 * share. The AWS SDK reads its credentials from the standard variables, as in production.
 */
export async function startS3Server(bucket = 'mailroom-test'): Promise<S3Server> {
  const directory = await mkdtemp(join(tmpdir(), 'mailroom-s3rver-'));
  const s3 = new S3rver({ port: 0, address: '127.0.0.1', silent: true, directory });
  const { port } = await s3.run();
  const endpoint = `http://127.0.0.1:${port}`;
  const credentials = { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' };
  const client = new S3Client({ region: 'us-east-1', endpoint, forcePathStyle: true, credentials });
  await client.send(new CreateBucketCommand({ Bucket: bucket }));
  client.destroy();
  return {
    env: {
      BLOB_STORE: `s3://${bucket}/mail`,
      S3_ENDPOINT: endpoint,
      AWS_ACCESS_KEY_ID: credentials.accessKeyId,
      AWS_SECRET_ACCESS_KEY: credentials.secretAccessKey,
    },
    async close() {
      await s3.close();
      await rm(directory, { recursive: true, force: true });
    },
  };
}
