import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { openEventStream } from '../events/sse-client.ts';
import { TEST_DATABASE_URL } from '../helpers/app.ts';
import { movableClock } from '../helpers/clock.ts';
import { eventually } from '../helpers/eventually.ts';
import { apiClient } from '../helpers/http.ts';
import { type MailWorld, startMailWorld } from '../mail/setup.ts';
import { isErased, isKept, type Sent, segmentFiles, sendTracked } from './setup.ts';

/**
 * Retention at each level with a moved clock: the account keeps mail 30 days, domain b.test 10, its address
 * y@b.test 60 (more specific, so longer), short@a.test 5; held@a.test and domain c.test are under legal hold
 * (c.test's hold outweighs z@c.test's own 1 day). The sweeper runs every 50 ms.
 */
const clock = movableClock();
let world: MailWorld;
const sent: Record<string, Sent> = {};
const ids: Record<string, string> = {};

before(async () => {
  world = await startMailWorld(
    ['keep@a.test', 'short@a.test', 'held@a.test', 'x@b.test', 'y@b.test', 'z@c.test'],
    { RETENTION_SWEEP_SECONDS: '0.05' },
    { clock },
  );
  const domains = await world.api.get('/api/v2/domains');
  for (const domain of domains.body.data) ids[domain.domain] = domain.id;
  const addresses = await world.api.get('/api/v2/email-addresses');
  for (const address of addresses.body.data) ids[address.address] = address.id;
  for (const name of ['keep', 'short', 'held', 'x', 'y', 'z']) {
    const domain = { keep: 'a', short: 'a', held: 'a', x: 'b', y: 'b', z: 'c' }[name];
    sent[name] = await sendTracked(world, `${name}@${domain}.test`, `retained${name}word`);
  }
});
after(() => world.close());

test('PUT /api/v2/retention and the domain and address routes set periods and holds, and read them back', async () => {
  assert.deepEqual((await world.api.get('/api/v2/retention')).body, { retentionDays: null });
  assert.deepEqual((await world.api.put('/api/v2/retention', { retentionDays: 30 })).body, { retentionDays: 30 });
  assert.deepEqual((await world.api.get('/api/v2/retention')).body, { retentionDays: 30 });

  const b = await world.api.put(`/api/v2/domains/${ids['b.test']}/retention`, { retentionDays: 10 });
  assert.deepEqual(b.body, { id: ids['b.test'], retentionDays: 10, legalHold: false });
  const c = await world.api.put(`/api/v2/domains/${ids['c.test']}/retention`, { legalHold: true });
  assert.deepEqual(c.body, { id: ids['c.test'], retentionDays: null, legalHold: true });
  for (const [address, change] of [
    ['y@b.test', { retentionDays: 60 }],
    ['short@a.test', { retentionDays: 5 }],
    ['held@a.test', { legalHold: true }],
    ['z@c.test', { retentionDays: 1 }],
  ] as const) {
    const answer = await world.api.put(`/api/v2/email-addresses/${ids[address]}/retention`, change);
    assert.equal(answer.status, 200, JSON.stringify(answer.body));
  }
  assert.deepEqual((await world.api.get(`/api/v2/email-addresses/${ids['held@a.test']}/retention`)).body, {
    id: ids['held@a.test'],
    retentionDays: null,
    legalHold: true,
  });
});

test('retention routes: 400 for a period that is not 1 to 36500 days, 404 for another account or unknown id', async () => {
  const outOfRange = 'retentionDays must be a whole number of days from 1 to 36500, or null';
  const notInteger = 'Invalid request: body/retentionDays must be integer,null';
  for (const [retentionDays, error] of [
    [0, outOfRange],
    [-1, outOfRange],
    [36_501, outOfRange],
    [1.5, notInteger],
    ['ten', notInteger],
  ] as const) {
    const answer = await world.api.put('/api/v2/retention', { retentionDays });
    assert.deepEqual([answer.status, answer.body], [400, { error }], String(retentionDays));
  }
  assert.deepEqual((await world.api.get('/api/v2/retention')).body, { retentionDays: 30 }, 'unchanged');
  const other = await world.server.newAccountKey('other-retention');
  const outsider = apiClient(world.server.baseUrl, other);
  const domain = await outsider.put(`/api/v2/domains/${ids['a.test']}/retention`, { retentionDays: 1 });
  assert.deepEqual([domain.status, domain.body], [404, { error: 'Domain not found' }]);
  const address = await outsider.get(`/api/v2/email-addresses/${ids['keep@a.test']}/retention`);
  assert.deepEqual([address.status, address.body], [404, { error: 'Email address not found' }]);
  assert.deepEqual((await outsider.get('/api/v2/retention')).body, { retentionDays: null });
});

test('each level expires its mail with rows, search entries and blobs; the most specific period wins', async () => {
  for (const name of Object.keys(sent)) assert.ok(await isKept(world, sent[name]!), name);

  clock.advanceDays(6);
  await eventually(() => isErased(world, sent.short!), 'the address period (5 days) expires short@a.test');
  for (const name of ['keep', 'held', 'x', 'y', 'z']) assert.ok(await isKept(world, sent[name]!), name);

  clock.advanceDays(5);
  await eventually(() => isErased(world, sent.x!), 'the domain period (10 days) expires x@b.test');
  for (const name of ['keep', 'held', 'y', 'z']) assert.ok(await isKept(world, sent[name]!), name);

  clock.advanceDays(20);
  await eventually(() => isErased(world, sent.keep!), 'the account period (30 days) expires keep@a.test');
  for (const name of ['held', 'y', 'z']) assert.ok(await isKept(world, sent[name]!), name);

  clock.advanceDays(30);
  await eventually(() => isErased(world, sent.y!), "y@b.test's own 60 days pass");
  for (const name of ['held', 'z']) assert.ok(await isKept(world, sent[name]!), `${name} is under legal hold`);
  // A segment emptied by the erase is removed just after its last record is zeroed, which is all isErased sees.
  await eventually(async () => (await segmentFiles(world)).length === 1, 'the held mail keeps its segment, alone');
});

test('expired mail takes its events: a replay from the start has no email.received of it, the kept mail’s stay', async () => {
  const replay = await openEventStream(world.server.baseUrl, world.server.apiKey, TEST_DATABASE_URL ? '0-0' : '0');
  try {
    const received = async (name: string) => {
      for (let count = 1; ; count++) {
        const events = await replay.waitFor(count, 5000);
        if (events.at(-1)!.data.emailId === sent[name]!.id) return;
      }
    };
    // Sent last, z@c.test's event ends the replay of every email.received.
    await received('z');
    const replayed = replay.events
      .filter((event) => event.event === 'email.received')
      .map((event) => event.data.emailId);
    assert.deepEqual(replayed, [sent.held!.id, sent.z!.id]);
  } finally {
    await replay.close();
  }
});

test('lifting the legal holds lets the held mail expire, and the emptied segment file is removed', async () => {
  await world.api.put(`/api/v2/email-addresses/${ids['held@a.test']}/retention`, { legalHold: false });
  await eventually(() => isErased(world, sent.held!), 'held@a.test expires under the account period');
  assert.ok(await isKept(world, sent.z!), "c.test's hold still keeps z@c.test");

  await world.api.put(`/api/v2/domains/${ids['c.test']}/retention`, { legalHold: false });
  await eventually(() => isErased(world, sent.z!), "z@c.test's own day has long passed");
  await eventually(async () => (await segmentFiles(world)).length === 0, 'the emptied segment file is removed');
  assert.equal((await world.api.get('/api/v2/mail?includeArchived=true')).body.pagination.total, 0);
  assert.deepEqual((await world.api.get('/api/e2/mail/threads')).body.threads, [], 'emptied threads go too');
});
