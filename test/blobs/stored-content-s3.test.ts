import { startTestApp } from '../helpers/app.ts';
import { startS3Server } from '../helpers/s3.ts';
import { storedContentSuite } from '../ingest/stored-content.ts';

/** The same stored-content suite as on the filesystem, with BLOB_STORE=s3://… against s3rver on loopback. */
async function startWithS3(dnsAddress: string) {
  const s3 = await startS3Server();
  // In this process the SDK reads the credentials from process.env, as a deployment's would.
  const { AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, ...blobStore } = s3.env;
  Object.assign(process.env, { AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY });
  const server = await startTestApp({ DNS_SERVERS: dnsAddress, ...blobStore });
  return {
    ...server,
    async close() {
      await server.close();
      await s3.close();
    },
  };
}

storedContentSuite('S3', startWithS3, () => ({
  bucketName: 'mailroom-test',
  keyPrefix: 'mail/',
  key: /^raw\/\d{4}\/\d\d\/\d\d\/msg_[0-9a-z]{26}\.eml$/,
}));
