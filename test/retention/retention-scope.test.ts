import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { movableClock } from '../helpers/clock.ts';
import { createVerifiedDomain } from '../helpers/domains.ts';
import { eventually } from '../helpers/eventually.ts';
import { apiClient } from '../helpers/http.ts';
import { startWebhookReceiver, type WebhookReceiver } from '../helpers/webhook-receiver.ts';
import { type MailWorld, startMailWorld } from '../mail/setup.ts';
import { isErased, isKept, type Sent, sendTracked } from './setup.ts';

/**
 * What a period does not reach. The account keeps mail 2 days. Domain held.test and the address
 * held@open.test each have a period of their own, 1 day, and a legal hold, which outweighs it. Another account,
 * with no period of its own, has mail as old. hooked@open.test's webhook receiver took its first message, and never
 * answers the second, whose delivery is still being attempted. The sweeper runs every 50 ms.
 */
const clock = movableClock();
let world: MailWorld;
/** The other account's view of the same server. */
let outsider: MailWorld;
let receiver: WebhookReceiver;
const sent: Record<string, Sent> = {};

before(async () => {
  receiver = await startWebhookReceiver();
  // The first request is answered; every one after it hangs.
  receiver.answer({ status: 200 }, 'hang');
  world = await startMailWorld(
    ['inbox@held.test', 'held@open.test', 'plain@open.test'],
    { RETENTION_SWEEP_SECONDS: '0.05' },
    { clock },
  );
  const ids: Record<string, string> = {};
  for (const domain of (await world.api.get('/api/v2/domains')).body.data) ids[domain.domain] = domain.id;
  for (const address of (await world.api.get('/api/v2/email-addresses')).body.data) ids[address.address] = address.id;

  outsider = { ...world, api: apiClient(world.server.baseUrl, await world.server.newAccountKey('outsider')) };
  const domain = await createVerifiedDomain(outsider.api, world.dns, 'outsider.test');
  const address = await outsider.api.post('/api/v2/email-addresses', {
    address: 'o@outsider.test',
    domainId: domain.id,
  });
  assert.equal(address.status, 201, JSON.stringify(address.body));

  const hook = await world.api.post('/api/v2/endpoints', {
    name: 'never answers',
    type: 'webhook',
    config: { url: receiver.url, timeout: 300 },
  });
  const hooked = await world.api.post('/api/v2/email-addresses', {
    address: 'hooked@open.test',
    domainId: ids['open.test'],
    endpointId: hook.body.id,
  });
  assert.equal(hooked.status, 201, JSON.stringify(hooked.body));

  sent.delivered = await sendTracked(world, 'hooked@open.test', 'scopedeliveredword');
  await eventually(async () => {
    const done = await world.api.get(`/api/v2/deliveries?emailId=${sent.delivered!.id}&status=success`);
    return done.body.pagination.total === 1;
  }, 'the first message is delivered');
  sent.hooked = await sendTracked(world, 'hooked@open.test', 'scopehookedword');
  await receiver.waitForRequests(2);
  sent.domainHeld = await sendTracked(world, 'inbox@held.test', 'scopedomainheldword');
  sent.addressHeld = await sendTracked(world, 'held@open.test', 'scopeaddressheldword');
  sent.plain = await sendTracked(world, 'plain@open.test', 'scopeplainword');
  // Stored with no address row (postmaster@ needs none): the account's period reaches it all the same.
  sent.postmaster = await sendTracked(world, 'postmaster@open.test', 'scopepostmasterword');
  sent.outsider = await sendTracked(outsider, 'o@outsider.test', 'scopeoutsiderword');

  assert.equal((await world.api.put('/api/v2/retention', { retentionDays: 2 })).status, 200);
  const domainHold = await world.api.put(`/api/v2/domains/${ids['held.test']}/retention`, {
    retentionDays: 1,
    legalHold: true,
  });
  assert.deepEqual(domainHold.body, { id: ids['held.test'], retentionDays: 1, legalHold: true });
  const addressHold = await world.api.put(`/api/v2/email-addresses/${ids['held@open.test']}/retention`, {
    retentionDays: 1,
    legalHold: true,
  });
  assert.deepEqual(addressHold.body, { id: ids['held@open.test'], retentionDays: 1, legalHold: true });
});
after(async () => {
  await receiver.close();
  await world.close();
});

test("a hold outweighs its scope's period; another account's mail and mail still being delivered are kept", async () => {
  clock.advanceDays(3);
  // Every period has passed: the account's own mail outside any hold goes, which shows a sweep has run.
  await eventually(() => isErased(world, sent.plain!), "the account's 2 days expire plain@open.test");
  await eventually(() => isErased(world, sent.delivered!), 'mail whose delivery has ended expires too');
  await eventually(() => isErased(world, sent.postmaster!), 'mail stored under no address expires too');
  assert.equal(await isKept(world, sent.domainHeld!), true, "held.test's hold outweighs its 1 day");
  assert.equal(await isKept(world, sent.addressHeld!), true, "held@open.test's hold outweighs its 1 day");
  assert.equal(await isKept(outsider, sent.outsider!), true, 'the other account keeps its mail');
  assert.equal(await isKept(world, sent.hooked!), true, 'mail whose delivery is in flight waits for it');
});
