import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { movableClock } from '../helpers/clock.ts';
import { type MailWorld, startMailWorld } from '../mail/setup.ts';
import { isKept, type Sent, sendTracked } from './setup.ts';

/**
 * The account keeps mail 30 days; domain held.test and the address kept@addr-held.test are under legal hold. Deleting
 * the domain or the address would lift its hold, and the mail it keeps would then expire by the account's period.
 * The sweeper runs every 50 ms.
 */
const clock = movableClock();
let world: MailWorld;
const ids: Record<string, string> = {};
const sent: Record<string, Sent> = {};

before(async () => {
  world = await startMailWorld(
    ['inbox@held.test', 'kept@addr-held.test'],
    { RETENTION_SWEEP_SECONDS: '0.05' },
    { clock },
  );
  for (const domain of (await world.api.get('/api/v2/domains')).body.data) ids[domain.domain] = domain.id;
  for (const address of (await world.api.get('/api/v2/email-addresses')).body.data) ids[address.address] = address.id;
  sent.domain = await sendTracked(world, 'inbox@held.test', 'domainheldword');
  sent.address = await sendTracked(world, 'kept@addr-held.test', 'addressheldword');
  assert.equal((await world.api.put('/api/v2/retention', { retentionDays: 30 })).status, 200);
  const domainHold = await world.api.put(`/api/v2/domains/${ids['held.test']}/retention`, { legalHold: true });
  assert.equal(domainHold.status, 200);
  const addressHold = await world.api.put(`/api/v2/email-addresses/${ids['kept@addr-held.test']}/retention`, {
    legalHold: true,
  });
  assert.equal(addressHold.status, 200);
});
after(() => world.close());

for (const family of ['e2', 'v2']) {
  test(`DELETE /api/${family}/domains/{id}: 409 while the domain is under legal hold; it stays`, async () => {
    const response = await world.api.delete(`/api/${family}/domains/${ids['held.test']}`);
    assert.equal(response.status, 409);
    assert.deepEqual(response.body, {
      error: 'Cannot delete held.test: it is under a legal hold, which keeps its mail. Lift the hold first.',
      code: 'LEGAL_HOLD',
    });
    assert.equal((await world.api.get(`/api/v2/domains/${ids['held.test']}`)).status, 200);
  });

  test(`DELETE /api/${family}/domains/{id}: 409 while one of its addresses is under legal hold; both stay`, async () => {
    const response = await world.api.delete(`/api/${family}/domains/${ids['addr-held.test']}`);
    assert.equal(response.status, 409);
    assert.deepEqual(response.body, {
      error:
        'Cannot delete addr-held.test: its address kept@addr-held.test is under a legal hold, which keeps its mail. Lift the hold first.',
      code: 'LEGAL_HOLD',
    });
    assert.equal((await world.api.get(`/api/v2/email-addresses/${ids['kept@addr-held.test']}`)).status, 200);
  });
}

for (const family of ['e2', 'v2']) {
  test(`DELETE /api/${family}/email-addresses/{id}: 409 while the address is under legal hold; it stays`, async () => {
    const response = await world.api.delete(`/api/${family}/email-addresses/${ids['kept@addr-held.test']}`);
    assert.equal(response.status, 409);
    assert.deepEqual(response.body, {
      error: 'Cannot delete kept@addr-held.test: it is under a legal hold, which keeps its mail. Lift the hold first.',
      code: 'LEGAL_HOLD',
    });
    assert.equal((await world.api.get(`/api/v2/email-addresses/${ids['kept@addr-held.test']}`)).status, 200);
  });
}

test('the held mail outlives the account period after the refused deletes', async () => {
  clock.advanceDays(31);
  await sleep(500);
  assert.equal(await isKept(world, sent.domain!), true);
  assert.equal(await isKept(world, sent.address!), true);
});
