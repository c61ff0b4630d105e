import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CreateBucketCommand, S3Client } from '@aws-sdk/client-s3';
import S3rver from 's3rver';
import { startTestApp } from '../helpers/app.ts';
import { storedContentSuite } from '../ingest/stored-content.ts';

/**
 * The same stored-content suite as on the filesystem, with BLOB_STORE=s3://… against s3rver (an S3-compatible server
 * from npm) on loopback. The AWS SDK reads its credentials from the standard variables, as in production.
 */
async function startWithS3(dnsAddress: string) {
  const directory = await mkdtemp(join(tmpdir(), 'mailroom-s3rver-'));
  const s3 = new S3rver({ port: 0, address: '127.0.0.1', silent: true, directory });
  const { port } = await s3.run();
  const endpoint = `http://127.0.0.1:${port}`;
  process.env.AWS_ACCESS_KEY_ID = 'S3RVER';
  process.env.AWS_SECRET_ACCESS_KEY = 'S3RVER';
  const client = new S3Client({
    region: 'us-east-1',
    endpoint,
    forcePathStyle: true,
    credentials: { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' },
  });
  await client.send(new CreateBucketCommand({ Bucket: 'mailroom-test' }));
  client.destroy();
  const server = await startTestApp({
    DNS_SERVERS: dnsAddress,
    BLOB_STORE: 's3://mailroom-test/mail',
    S3_ENDPOINT: endpoint,
  });
  return {
    ...server,
    async close() {
      await server.close();
      await s3.close();
      await rm(directory, { recursive: true, force: true });
    },
  };
}

storedContentSuite('S3', startWithS3, () => ({
  bucketName: 'mailroom-test',
  keyPrefix: 'mail/',
  key: /^raw\/\d{4}\/\d\d\/\d\d\/msg_[0-9a-z]{26}\.eml$/,
}));
