import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, test } from 'node:test';
import { type MailroomProcess, startMailroom } from '../delivery/processes.ts';
import { type DnsServer, startDnsServer } from '../helpers/dns-server.ts';
import { publishRequiredRecords } from '../helpers/domains.ts';
import { createInstallation } from '../helpers/process.ts';

const API_KEY = `mr_test_${randomBytes(16).toString('hex')}`;

let dns: DnsServer;
let installation: Awaited<ReturnType<typeof createInstallation>>;
let running: MailroomProcess | undefined;

before(async () => {
  dns = await startDnsServer();
  installation = await createInstallation({ MAILROOM_API_KEY: API_KEY, DNS_SERVERS: dns.address });
});
after(async () => {
  await running?.stop();
  await installation.remove();
  await dns.close();
});

async function restartWith(mxHost: string) {
  await running?.stop();
  running = await startMailroom({ ...installation.env, MX_HOST: mxHost }, API_KEY);
  return running.api;
}

type Record = { type: string; name: string; value: string; isRequired: boolean };

test('a check after MX_HOST changed points the MX and SPF records at the new host and keeps the token', async () => {
  let api = await restartWith('oldhost');
  const created = await api.post('/api/v2/domains', { domain: 'moved.test' });
  assert.equal(created.status, 201, JSON.stringify(created.body));
  const before: Record[] = created.body.dnsRecords;
  const token = before.find((record) => record.name === '_mailroom.moved.test')!.value;
  assert.deepEqual(
    before.filter((record) => record.name === 'moved.test').map((record) => record.value),
    ['10 oldhost', 'v=spf1 a:oldhost ~all'],
  );

  api = await restartWith('mx.moved-mailroom.test');
  const stale = await api.get(`/api/v2/domains/${created.body.id}/dns-records`);
  assert.equal(stale.body.records[1].value, '10 oldhost', 'reading the records changes nothing; a check does');
  publishRequiredRecords(dns, [
    { type: 'TXT', name: '_mailroom.moved.test', value: token, isRequired: true },
    { type: 'MX', name: 'moved.test', value: '10 mx.moved-mailroom.test', isRequired: true },
  ]);
  const checked = await api.get(`/api/v2/domains/${created.body.id}?check=true`);
  assert.equal(checked.status, 200);
  assert.equal(checked.body.status, 'verified', JSON.stringify(checked.body.verificationCheck));
  assert.deepEqual(
    checked.body.verificationCheck.dnsRecords.map((record: Record) => [record.type, record.name, record.value]),
    [
      ['TXT', '_mailroom.moved.test', token],
      ['MX', 'moved.test', '10 mx.moved-mailroom.test'],
      ['TXT', 'moved.test', 'v=spf1 a:mx.moved-mailroom.test ~all'],
      ['TXT', '_dmarc.moved.test', 'v=DMARC1; p=none; rua=mailto:dmarc@moved.test'],
    ],
  );
  const stored = await api.get(`/api/v2/domains/${created.body.id}/dns-records`);
  assert.deepEqual(
    stored.body.records.map((record: Record) => record.value),
    [
      token,
      '10 mx.moved-mailroom.test',
      'v=spf1 a:mx.moved-mailroom.test ~all',
      'v=DMARC1; p=none; rua=mailto:dmarc@moved.test',
    ],
  );
});
