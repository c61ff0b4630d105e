import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { startSecondInstance, startTestApp, type TestApp } from '../helpers/app.ts';
import { type DnsServer, startDnsServer } from '../helpers/dns-server.ts';
import { type ApiClient, apiClient } from '../helpers/http.ts';

/** Account limits hold when the creates that reach them come at once, through one instance or two. */

let dns: DnsServer;
let first: TestApp;
let second: TestApp | undefined;

before(async () => {
  dns = await startDnsServer();
  first = await startTestApp({ DNS_SERVERS: dns.address });
  second = await startSecondInstance(first, { DNS_SERVERS: dns.address });
});
after(async () => {
  await second?.close();
  await first.close();
  await dns.close();
});

/** Clients of one account that alternate between the instances. */
function clients(key: string): ApiClient[] {
  return [apiClient(first.baseUrl, key), apiClient((second ?? first).baseUrl, key)];
}

test('POST /api/v2/domains at once past the domain limit: exactly the limit is created, the rest are 403', async () => {
  const key = await first.newAccountKey('limited');
  const [api, other] = clients(key);
  await first.app.accounts.setDomainLimit('limited', 3);
  for (const name of ['one.limit.test', 'two.limit.test']) {
    assert.equal((await api!.post('/api/v2/domains', { domain: name })).status, 201);
  }
  const answers = await Promise.all(
    Array.from({ length: 6 }, (_, n) => [api, other][n % 2]!.post('/api/v2/domains', { domain: `c${n}.limit.test` })),
  );
  assert.deepEqual(answers.map((answer) => answer.status).sort(), [201, 403, 403, 403, 403, 403]);
  for (const answer of answers.filter((a) => a.status === 403)) {
    assert.deepEqual(answer.body, { error: 'Domain limit reached. Please upgrade your plan to add more domains.' });
  }
  assert.equal((await api!.get('/api/v2/domains')).body.pagination.total, 3);
});

test('POST /api/e2/guard at once past 200 rules: exactly 200 exist, the rest are 403', async () => {
  const key = await first.newAccountKey('many-rules');
  const [api, other] = clients(key);
  const rule = (n: number) => ({
    name: `Rule ${n}`,
    conditions: { subject: { operator: 'contains', value: `word${n}` } },
    action: { type: 'tag', tag: `t${n}` },
  });
  for (let n = 1; n <= 196; n++) assert.equal((await api!.post('/api/e2/guard', rule(n))).status, 201);
  const answers = await Promise.all(
    Array.from({ length: 8 }, (_, n) => [api, other][n % 2]!.post('/api/e2/guard', rule(197 + n))),
  );
  assert.deepEqual(
    answers.map((answer) => answer.status).sort(),
    [201, 201, 201, 201, 403, 403, 403, 403],
    JSON.stringify(answers.map((answer) => answer.body)),
  );
  assert.equal((await api!.get('/api/e2/guard?limit=1')).body.pagination.total, 200);
});

test('POST /api/v2/keys at once past 50 active keys: exactly 50 are active, the rest are 403', async () => {
  // The account's first key, and 45 more: 4 short of the limit.
  const key = await first.newAccountKey('many-keys');
  const [api, other] = clients(key);
  for (let count = 1; count < 46; count++) assert.equal((await api!.post('/api/v2/keys')).status, 201);
  const answers = await Promise.all(Array.from({ length: 8 }, (_, n) => [api, other][n % 2]!.post('/api/v2/keys')));
  assert.deepEqual(
    answers.map((answer) => answer.status).sort(),
    [201, 201, 201, 201, 403, 403, 403, 403],
    JSON.stringify(answers.map((answer) => answer.body.error ?? answer.body.id)),
  );
  const keys = await api!.get('/api/v2/keys');
  assert.equal(keys.body.data.filter((k: { revokedAt: string | null }) => k.revokedAt === null).length, 50);
});
