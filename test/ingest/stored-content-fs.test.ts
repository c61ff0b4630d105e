import { startTestApp } from '../helpers/app.ts';
import { storedContentSuite } from './stored-content.ts';

storedContentSuite(
  'filesystem',
  (dnsAddress) => startTestApp({ DNS_SERVERS: dnsAddress }),
  // A record of a segment file: `<day>/<segment>.seg/<offset>-<length>`.
  () => ({ bucketName: 'fs', keyPrefix: '', key: /^raw\/\d{4}\/\d\d\/\d\d\/seg_[0-9a-z]{26}\.seg\/\d+-\d+$/ }),
);
