import { startTestApp } from '../helpers/app.ts';
import { storedContentSuite } from './stored-content.ts';

storedContentSuite(
  'filesystem',
  (dnsAddress) => startTestApp({ DNS_SERVERS: dnsAddress }),
  () => ({ bucketName: 'fs', keyPrefix: '' }),
);
