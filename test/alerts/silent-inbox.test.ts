import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import {
  type AlertWorld,
  advanceClock,
  alertEvents,
  completeCheckPasses,
  startAlertWorld,
  verifiedAlertWebhooks,
  waitForAlert,
} from './setup.ts';

/**
 * Silent inboxes: with `silentAfterHours: 24`, a day of the test's clock without mail raises silent_inbox for each
 * address and the domain, once (a check pass here moves the clock two hours); mail to busy@ clears its alert and the domain's at once, quiet@'s stays open until
 * the silent period is switched off.
 */
let world: AlertWorld;
let domainId: string;

before(async () => {
  world = await startAlertWorld(['quiet@silent.test', 'busy@silent.test']);
  domainId = (await world.api.get('/api/v2/domains')).body.data[0].id;
});
after(() => world.close());

const sorted = <T>(items: T[]) => [...items].sort((a, b) => JSON.stringify(a).localeCompare(JSON.stringify(b)));

test('nothing is silent before the period has passed, also with the period set', async () => {
  const settings = await world.api.put('/api/v2/alerts/settings', { silentAfterHours: 24 });
  assert.equal(settings.body.silentAfterHours, 24);
  await world.deliver({ from: 'ann@sender.test', to: 'busy@silent.test', subject: 'Before', text: 'hello' });
  await completeCheckPasses(world, domainId);
  assert.deepEqual(alertEvents(world.stream), []);
});

test('a quiet day raises silent_inbox once for each address and the domain', async () => {
  await advanceClock(world, 24 * 60);
  for (const name of ['busy@silent.test', 'quiet@silent.test', 'silent.test']) {
    await waitForAlert(world.stream, 'alert.raised', name);
  }
  // Passes that find them all still quiet raise nothing more.
  await completeCheckPasses(world, domainId);
  const raised: Array<[string, string, string]> = [
    ['alert.raised', 'silent_inbox', 'busy@silent.test'],
    ['alert.raised', 'silent_inbox', 'quiet@silent.test'],
    ['alert.raised', 'silent_inbox', 'silent.test'],
  ];
  assert.deepEqual(sorted(alertEvents(world.stream)), raised);
  await world.alerts.waitForRequests(3);
  assert.deepEqual(sorted(verifiedAlertWebhooks(world)), raised);
  const open = await world.api.get('/api/v2/alerts?status=open');
  assert.equal(open.body.pagination.total, 3);
  const quiet = open.body.data.find(
    (alert: { subject: { name: string } }) => alert.subject.name === 'quiet@silent.test',
  );
  assert.deepEqual(quiet.subject.type, 'address');
  assert.deepEqual(quiet.details.silentAfterHours, 24);
});

test('mail to busy@ clears its alert and the domain’s; quiet@ stays silent; nothing is raised again', async () => {
  await world.deliver({ from: 'ann@sender.test', to: 'busy@silent.test', subject: 'Back', text: 'hello again' });
  await waitForAlert(world.stream, 'alert.cleared', 'busy@silent.test');
  await waitForAlert(world.stream, 'alert.cleared', 'silent.test');
  await completeCheckPasses(world, domainId);
  assert.deepEqual(sorted(alertEvents(world.stream).slice(3)), [
    ['alert.cleared', 'silent_inbox', 'busy@silent.test'],
    ['alert.cleared', 'silent_inbox', 'silent.test'],
  ]);
  const open = await world.api.get('/api/v2/alerts?status=open');
  assert.deepEqual(
    open.body.data.map((alert: { subject: { name: string } }) => alert.subject.name),
    ['quiet@silent.test'],
  );
  await world.alerts.waitForRequests(5);
  assert.equal(verifiedAlertWebhooks(world).length, 5);
});

test('switching the silent period off clears the alerts it raised', async () => {
  await world.api.put('/api/v2/alerts/settings', { silentAfterHours: null });
  const cleared = await waitForAlert(world.stream, 'alert.cleared', 'quiet@silent.test');
  assert.equal(cleared.status, 'cleared');
  assert.deepEqual((await world.api.get('/api/v2/alerts?status=open')).body.data, []);
  const all = await world.api.get('/api/v2/alerts?limit=2');
  assert.deepEqual(all.body.pagination, { limit: 2, offset: 0, total: 3, hasMore: true });
});

test('an address switched off for days and on again is silent only a period after it was switched on', async () => {
  const quietId = (await world.api.get('/api/v2/email-addresses')).body.data.find(
    (address: { address: string }) => address.address === 'quiet@silent.test',
  ).id;
  assert.equal((await world.api.put(`/api/v2/email-addresses/${quietId}`, { isActive: false })).status, 200);
  await advanceClock(world, 48 * 60);
  assert.equal((await world.api.put(`/api/v2/email-addresses/${quietId}`, { isActive: true })).status, 200);
  assert.equal((await world.api.put('/api/v2/alerts/settings', { silentAfterHours: 24 })).status, 200);
  // busy@ and the domain have been quiet for two days; quiet@ receives again since a moment ago.
  await waitForAlert(world.stream, 'alert.raised', 'busy@silent.test');
  await waitForAlert(world.stream, 'alert.raised', 'silent.test');
  await completeCheckPasses(world, domainId);
  assert.deepEqual(sorted(alertEvents(world.stream).slice(6)), [
    ['alert.raised', 'silent_inbox', 'busy@silent.test'],
    ['alert.raised', 'silent_inbox', 'silent.test'],
  ]);
  await advanceClock(world, 24 * 60);
  await waitForAlert(world.stream, 'alert.raised', 'quiet@silent.test');
});
