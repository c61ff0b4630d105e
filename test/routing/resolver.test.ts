import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { sql } from 'kysely';
import type { RouteDecision } from '../../src/routing/index.ts';
import { startTestApp, TEST_DATABASE_URL, type TestApp } from '../helpers/app.ts';
import { type DnsServer, startDnsServer } from '../helpers/dns-server.ts';
import { createVerifiedDomain } from '../helpers/domains.ts';
import { type ApiClient, apiClient } from '../helpers/http.ts';

let dns: DnsServer;
let server: TestApp;
let api: ApiClient;
const ids: Record<string, string> = {};

async function address(address: string, domainId: string, extra: Record<string, unknown> = {}) {
  const created = await api.post('/api/v2/email-addresses', { address, domainId, ...extra });
  assert.equal(created.status, 201, JSON.stringify(created.body));
  ids[address] = created.body.id;
  return created.body;
}

/** Creates an endpoint whose id the table finds under its name. */
async function endpoint(name: string, type: string, config: Record<string, unknown>) {
  const created = await api.post('/api/v2/endpoints', { name, type, config });
  ids[name] = created.body.id;
}

before(async () => {
  dns = await startDnsServer();
  server = await startTestApp({ DNS_SERVERS: dns.address });
  api = apiClient(server.baseUrl, server.apiKey);

  const routed = await createVerifiedDomain(api, dns, 'route.test');
  ids.domain = routed.id;
  const catchAll = await createVerifiedDomain(api, dns, 'catchall.test');
  ids.catchAllDomain = catchAll.id;
  const dmarcRouted = await createVerifiedDomain(api, dns, 'dmarc-routed.test');
  ids.dmarcDomain = dmarcRouted.id;
  const subdomain = await api.post('/api/v2/domains', { domain: 'mail.route.test' });
  assert.equal(subdomain.body.status, 'verified');
  ids.subdomain = subdomain.body.id;
  const unverified = await api.post('/api/v2/domains', { domain: 'unverified-route.test' });
  ids.unverified = unverified.body.id;

  await endpoint('hook', 'webhook', { url: 'http://127.0.0.1:9/hook' });
  await endpoint('forward', 'email', { forwardTo: 'someone@example.com' });
  await endpoint('paused', 'webhook', { url: 'http://127.0.0.1:9/paused' });
  const legacy = await api.post('/api/v2/webhooks', { name: 'legacy', url: 'http://127.0.0.1:9/legacy' });
  ids.legacy = legacy.body.id;
  const legacyOff = await api.post('/api/v2/webhooks', { name: 'legacy off', url: 'http://127.0.0.1:9/legacy-off' });
  ids.legacyOff = legacyOff.body.id;

  await address('info@route.test', routed.id, { endpointId: ids.hook });
  await address('sales@route.test', routed.id, { endpointId: ids.forward });
  await address('store@route.test', routed.id);
  await address('legacy@route.test', routed.id, { webhookId: ids.legacy });
  await address('paused@route.test', routed.id, { endpointId: ids.paused });
  await address('legacy-off@route.test', routed.id, { webhookId: ids.legacyOff });
  await address('off@route.test', routed.id, { endpointId: ids.hook, isActive: false });
  await address('tagged+news@route.test', routed.id, { endpointId: ids.forward });
  await address('hello@mail.route.test', subdomain.body.id, { endpointId: ids.hook });
  await address('early@unverified-route.test', unverified.body.id, { endpointId: ids.hook });
  await address('vip@catchall.test', catchAll.id, { endpointId: ids.forward });
  await address('dmarc@dmarc-routed.test', dmarcRouted.id, { endpointId: ids.hook });

  assert.equal((await api.put(`/api/v2/endpoints/${ids.paused}`, { isActive: false })).status, 200);
  assert.equal((await api.put(`/api/v2/webhooks/${ids.legacyOff}`, { isActive: false })).status, 200);
  const enabled = await api.put(`/api/v2/domains/${catchAll.id}`, {
    isCatchAllEnabled: true,
    catchAllEndpointId: ids.hook,
  });
  assert.equal(enabled.status, 200, JSON.stringify(enabled.body));
  await server.app.database.db
    .updateTable('domains')
    .set({ receive_dmarc_emails: 1 })
    .where('id', '=', dmarcRouted.id)
    .execute();
});
after(async () => {
  await server.close();
  await dns.close();
});

type Expected = (ids: Record<string, string>, accountId: string) => RouteDecision;

const accept =
  (
    recipient: string,
    domainKey: string,
    addressKey: string | null,
    matchedBy: 'address' | 'subaddress' | 'catch_all' | 'dmarc' | 'postmaster',
    target: (ids: Record<string, string>) => Extract<RouteDecision, { accepted: true }>['target'],
  ): Expected =>
  (ids, accountId) => ({
    accepted: true,
    recipient,
    accountId,
    domainId: ids[domainKey]!,
    addressId: addressKey ? ids[addressKey]! : null,
    matchedBy,
    target: target(ids),
  });
const toHook = (ids: Record<string, string>) => ({
  kind: 'endpoint' as const,
  endpointId: ids.hook!,
  endpointType: 'webhook' as const,
});
const toForward = (ids: Record<string, string>) => ({
  kind: 'endpoint' as const,
  endpointId: ids.forward!,
  endpointType: 'email' as const,
});
const none = () => ({ kind: 'none' as const });
const reject =
  (reason: Extract<RouteDecision, { accepted: false }>['reason']): Expected =>
  () => ({ accepted: false, reason });
/** Refused on a domain the account registered: the decision names the account. */
const refuse =
  (reason: Extract<RouteDecision, { accepted: false }>['reason']): Expected =>
  (_ids, accountId) => ({ accepted: false, reason, accountId });

const table: Array<[string, string, Expected]> = [
  [
    'exact match to a webhook endpoint',
    'info@route.test',
    accept('info@route.test', 'domain', 'info@route.test', 'address', toHook),
  ],
  [
    'exact match to an email endpoint',
    'sales@route.test',
    accept('sales@route.test', 'domain', 'sales@route.test', 'address', toForward),
  ],
  [
    'case and surrounding brackets do not matter',
    ' <INFO@Route.TEST> ',
    accept('info@route.test', 'domain', 'info@route.test', 'address', toHook),
  ],
  [
    'an address without routing is stored only',
    'store@route.test',
    accept('store@route.test', 'domain', 'store@route.test', 'address', none),
  ],
  [
    'an address routed to a legacy webhook',
    'legacy@route.test',
    (ids, accountId) =>
      accept('legacy@route.test', 'domain', 'legacy@route.test', 'address', () => ({
        kind: 'webhook',
        webhookId: ids.legacy!,
      }))(ids, accountId),
  ],
  [
    'an inactive endpoint receives nothing: stored only',
    'paused@route.test',
    accept('paused@route.test', 'domain', 'paused@route.test', 'address', none),
  ],
  [
    'an inactive legacy webhook receives nothing: stored only',
    'legacy-off@route.test',
    accept('legacy-off@route.test', 'domain', 'legacy-off@route.test', 'address', none),
  ],
  [
    '+tag falls back to the address without it',
    'sales+q3@route.test',
    accept('sales+q3@route.test', 'domain', 'sales@route.test', 'subaddress', toForward),
  ],
  [
    'an address that itself has a + matches exactly',
    'tagged+news@route.test',
    accept('tagged+news@route.test', 'domain', 'tagged+news@route.test', 'address', toForward),
  ],
  ['an unknown address on a domain without catch-all rejects', 'nobody@route.test', refuse('unknown_address')],
  ['+tag of an unknown address rejects', 'nobody+x@route.test', refuse('unknown_address')],
  ['an inactive address rejects', 'off@route.test', refuse('inactive_address')],
  ['an inactive address rejects through its +tag too', 'off+x@route.test', refuse('inactive_address')],
  [
    'catch-all takes unknown addresses',
    'anyone@catchall.test',
    accept('anyone@catchall.test', 'catchAllDomain', null, 'catch_all', toHook),
  ],
  [
    'a specific address wins over catch-all',
    'vip@catchall.test',
    accept('vip@catchall.test', 'catchAllDomain', 'vip@catchall.test', 'address', toForward),
  ],
  [
    'a specific address wins over catch-all through its +tag',
    'vip+x@catchall.test',
    accept('vip+x@catchall.test', 'catchAllDomain', 'vip@catchall.test', 'subaddress', toForward),
  ],
  [
    'an unverified domain rejects even a configured address',
    'early@unverified-route.test',
    refuse('unverified_domain'),
  ],
  [
    'a registered subdomain routes its own addresses',
    'hello@mail.route.test',
    accept('hello@mail.route.test', 'subdomain', 'hello@mail.route.test', 'address', toHook),
  ],
  ['an unregistered subdomain of a verified domain is unknown', 'info@other.route.test', reject('unknown_domain')],
  [
    'dmarc@ is stored but not routed by default',
    'dmarc@route.test',
    accept('dmarc@route.test', 'domain', null, 'dmarc', none),
  ],
  [
    'dmarc+tag@ is dmarc mail too',
    'dmarc+rua@route.test',
    accept('dmarc+rua@route.test', 'domain', null, 'dmarc', none),
  ],
  [
    'dmarc@ routes normally when receiveDmarcEmails is set',
    'dmarc@dmarc-routed.test',
    accept('dmarc@dmarc-routed.test', 'dmarcDomain', 'dmarc@dmarc-routed.test', 'address', toHook),
  ],
  [
    'a quoted local part that needs no quotes is the same mailbox',
    '"info"@route.test',
    accept('info@route.test', 'domain', 'info@route.test', 'address', toHook),
  ],
  ['a local part that needs its quotes keeps them', '"in@fo"@route.test', refuse('unknown_address')],
  [
    'postmaster@ is stored without an address of its name (RFC 5321 §4.5.1)',
    'Postmaster@route.test',
    accept('postmaster@route.test', 'domain', null, 'postmaster', none),
  ],
  [
    'postmaster@ goes to the catch-all where there is one',
    'postmaster@catchall.test',
    accept('postmaster@catchall.test', 'catchAllDomain', null, 'catch_all', toHook),
  ],
  ['postmaster@ is refused on an unverified domain', 'postmaster@unverified-route.test', refuse('unverified_domain')],
  ['an unknown domain rejects (relay attempt)', 'info@unknown.test', reject('unknown_domain')],
  ['a malformed recipient rejects', 'not-an-address', reject('unknown_address')],
];

describe('RoutingService.resolve', () => {
  for (const [title, recipient, expected] of table) {
    test(`${title}: ${recipient.trim()}`, async () => {
      const accountId = (await server.app.accounts.authenticate(server.apiKey))!.id;
      assert.deepEqual(await server.app.router.resolve(recipient), expected(ids, accountId));
    });
  }

  test('a deactivated address keeps its routing when activated again', async () => {
    await api.put(`/api/v2/email-addresses/${ids['info@route.test']}`, { isActive: false });
    assert.deepEqual(await server.app.router.resolve('info@route.test'), {
      accepted: false,
      reason: 'inactive_address',
      accountId: (await server.app.accounts.authenticate(server.apiKey))!.id,
    });
    await api.put(`/api/v2/email-addresses/${ids['info@route.test']}`, { isActive: true });
    const decision = await server.app.router.resolve('info@route.test');
    assert.equal(decision.accepted, true);
    assert.deepEqual(decision.accepted && decision.target, toHook(ids));
  });
});

describe('decisions follow every routing change', () => {
  const resolve = (recipient: string) => server.app.router.resolve(recipient);
  const targetOf = (decision: RouteDecision) => (decision.accepted ? decision.target : decision.reason);

  test('endpoint, address, catch-all, domain status and domain changes each show in the next decision', async () => {
    const domain = await createVerifiedDomain(api, dns, 'follow.test');
    const hook = await api.post('/api/v2/endpoints', {
      name: 'follow hook',
      type: 'webhook',
      config: { url: 'http://127.0.0.1:9/follow' },
    });
    const routed = await address('a@follow.test', domain.id, { endpointId: hook.body.id });
    const toFollowHook = { kind: 'endpoint', endpointId: hook.body.id, endpointType: 'webhook' };
    assert.deepEqual(targetOf(await resolve('a@follow.test')), toFollowHook);
    assert.deepEqual(targetOf(await resolve('b@follow.test')), 'unknown_address');

    assert.equal((await api.put(`/api/v2/endpoints/${hook.body.id}`, { isActive: false })).status, 200);
    assert.deepEqual(targetOf(await resolve('a@follow.test')), { kind: 'none' });
    assert.equal((await api.put(`/api/v2/endpoints/${hook.body.id}`, { isActive: true })).status, 200);
    assert.deepEqual(targetOf(await resolve('a@follow.test')), toFollowHook);

    assert.equal((await api.delete(`/api/v2/email-addresses/${routed.id}`)).status, 200);
    assert.deepEqual(targetOf(await resolve('a@follow.test')), 'unknown_address');

    const catchAll = await api.put(`/api/v2/domains/${domain.id}`, {
      isCatchAllEnabled: true,
      catchAllEndpointId: hook.body.id,
    });
    assert.equal(catchAll.status, 200, JSON.stringify(catchAll.body));
    const caught = await resolve('b@follow.test');
    assert.equal(caught.accepted && caught.matchedBy, 'catch_all');
    assert.deepEqual(targetOf(caught), toFollowHook);

    // As the DNS check does when a domain's records disappear.
    await server.app.database.db.updateTable('domains').set({ status: 'failed' }).where('id', '=', domain.id).execute();
    assert.deepEqual(targetOf(await resolve('b@follow.test')), 'unverified_domain');

    assert.equal((await api.delete(`/api/v2/domains/${domain.id}`)).status, 200);
    assert.deepEqual(targetOf(await resolve('b@follow.test')), 'unknown_domain');
  });

  test('a deleted account takes its domains out of routing', async () => {
    const key = await server.newAccountKey('leaving');
    const own = apiClient(server.baseUrl, key);
    const domain = await createVerifiedDomain(own, dns, 'leaving.test');
    const created = await own.post('/api/v2/email-addresses', { address: 'x@leaving.test', domainId: domain.id });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    assert.equal((await resolve('x@leaving.test')).accepted, true);

    const account = (await server.app.accounts.authenticate(key))!;
    await server.app.database.db.deleteFrom('accounts').where('id', '=', account.id).execute();
    assert.deepEqual(await resolve('x@leaving.test'), { accepted: false, reason: 'unknown_domain' });
  });

  test('a write to columns routing does not read keeps the decisions', {
    skip: TEST_DATABASE_URL ? 'SQLite only: its routing version counter (PostgreSQL: routing-cluster.test.ts)' : false,
  }, async () => {
    const { db } = server.app.database;
    const version = async () =>
      (await sql<{ version: number }>`SELECT version FROM routing_version`.execute(db)).rows[0]!.version;
    const before = await version();
    await db.updateTable('domains').set({ last_dns_check: new Date().toISOString() }).execute();
    await db.updateTable('endpoints').set({ description: 'bookkeeping' }).execute();
    await db.updateTable('webhooks').set({ description: 'bookkeeping' }).execute();
    await db.updateTable('email_addresses').set({ updated_at: new Date().toISOString() }).execute();
    assert.equal(await version(), before);
    await db.updateTable('email_addresses').set({ is_active: 1 }).where('id', '=', ids['store@route.test']!).execute();
    assert.equal(await version(), before + 1);
  });
});
