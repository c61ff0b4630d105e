import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import pg from 'pg';
import type { RouteDecision } from '../../src/routing/index.ts';
import { startTestApp, TEST_DATABASE_URL, type TestApp } from '../helpers/app.ts';
import { type DnsServer, startDnsServer } from '../helpers/dns-server.ts';
import { createVerifiedDomain } from '../helpers/domains.ts';
import { type ApiClient, apiClient } from '../helpers/http.ts';
import { startPostgresProxy } from '../helpers/tcp-proxy.ts';

const skip = TEST_DATABASE_URL ? false : 'needs TEST_DATABASE_URL (PostgreSQL)';

let dns: DnsServer;
let first: TestApp;
let second: TestApp;
let api: ApiClient;
let domainId: string;
let accountId: string;
let schema: string;

before(async () => {
  if (skip) return;
  dns = await startDnsServer();
  first = await startTestApp({ DNS_SERVERS: dns.address });
  const database = first.app.config.database;
  assert.equal(database.kind, 'postgres');
  schema = database.schema!;
  second = await startTestApp({ DNS_SERVERS: dns.address, DATABASE_SCHEMA: schema });
  api = apiClient(first.baseUrl, first.apiKey);
  domainId = (await createVerifiedDomain(api, dns, 'cluster.test')).id;
  accountId = (await first.app.accounts.authenticate(first.apiKey))!.id;
});
after(async () => {
  if (skip) return;
  await second.close();
  await first.close();
  await dns.close();
});

async function createAddress(address: string): Promise<string> {
  const created = await api.post('/api/v2/email-addresses', { address, domainId });
  assert.equal(created.status, 201, JSON.stringify(created.body));
  return created.body.id;
}

/** `resolve()` on the second instance until it refuses `recipient`, for at most 5 s; its last decision. */
async function refusedBySecond(recipient: string): Promise<RouteDecision> {
  const deadline = Date.now() + 5_000;
  for (;;) {
    const decision = await second.app.router.resolve(recipient);
    if (!decision.accepted || Date.now() > deadline) return decision;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

async function withClient<T>(work: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: TEST_DATABASE_URL });
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end();
  }
}

/** The backends of both instances' routing listeners: pid, state and last query. */
function routingListeners(client: pg.Client) {
  return client
    .query<{ pid: number; state: string; query: string }>(
      'SELECT pid, state, query FROM pg_stat_activity WHERE application_name = $1',
      [`mailroom mailroom_routing_${schema}`],
    )
    .then((result) => result.rows);
}

describe('routing decisions on several instances of one PostgreSQL schema', () => {
  test('an address deactivated through one instance is refused by another that had routed mail to it', {
    skip,
  }, async () => {
    const id = await createAddress('leaving@cluster.test');
    const routed = await second.app.router.resolve('leaving@cluster.test');
    assert.equal(routed.accepted, true);
    assert.deepEqual(await second.app.router.resolve('leaving@cluster.test'), routed);

    assert.equal((await api.put(`/api/v2/email-addresses/${id}`, { isActive: false })).status, 200);
    assert.deepEqual(await refusedBySecond('leaving@cluster.test'), {
      accepted: false,
      reason: 'inactive_address',
      accountId,
    });
  });

  test('an instance’s own change applies to its next decision without waiting for the announcement', {
    skip,
  }, async () => {
    const id = await createAddress('own@cluster.test');
    assert.equal((await first.app.router.resolve('own@cluster.test')).accepted, true);
    await withClient(async (client) => {
      await client.query(`ALTER TABLE "${schema}".email_addresses DISABLE TRIGGER email_addresses_routing_announce`);
      try {
        assert.equal((await api.put(`/api/v2/email-addresses/${id}`, { isActive: false })).status, 200);
        assert.deepEqual(await first.app.router.resolve('own@cluster.test'), {
          accepted: false,
          reason: 'inactive_address',
          accountId,
        });
      } finally {
        await client.query(`ALTER TABLE "${schema}".email_addresses ENABLE TRIGGER email_addresses_routing_announce`);
      }
    });
  });

  test('a change made while the routing listeners were cut off is seen once they listen again', { skip }, async () => {
    const id = await createAddress('cut-off@cluster.test');
    assert.equal((await second.app.router.resolve('cut-off@cluster.test')).accepted, true);

    await withClient(async (client) => {
      const cut = (await routingListeners(client)).map((backend) => backend.pid);
      assert.equal(cut.length, 2);
      await client.query('SELECT pg_terminate_backend(pid) FROM unnest($1::int[]) AS pid', [cut]);
      // Announced to nobody: neither listener hears it, so only reconnecting may drop what `second` kept.
      assert.equal((await api.put(`/api/v2/email-addresses/${id}`, { isActive: false })).status, 200);
      const deadline = Date.now() + 10_000;
      for (;;) {
        const listening = (await routingListeners(client)).filter(
          ({ pid, state, query }) => !cut.includes(pid) && state === 'idle' && query.startsWith('LISTEN'),
        );
        if (listening.length === 2) break;
        assert.ok(Date.now() < deadline, 'the routing listeners did not reconnect within 10 s');
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    });
    assert.deepEqual(await second.app.router.resolve('cut-off@cluster.test'), {
      accepted: false,
      reason: 'inactive_address',
      accountId,
    });
  });

  test('a change is seen by an instance whose idle connections a NAT forgot silently, within seconds', {
    skip,
  }, async () => {
    const { proxy, url } = await startPostgresProxy(TEST_DATABASE_URL!);
    const third = await startTestApp({
      DNS_SERVERS: dns.address,
      DATABASE_SCHEMA: schema,
      DATABASE_URL: url,
    });
    try {
      const refused: RouteDecision = { accepted: false, reason: 'unknown_address', accountId };
      assert.deepEqual(await third.app.router.resolve('late@cluster.test'), refused);
      assert.deepEqual(await third.app.router.resolve('late@cluster.test'), refused);

      // Nothing tells the third instance its connections are gone, its routing listener's least of all.
      proxy.forget();
      await createAddress('late@cluster.test');
      const deadline = Date.now() + 20_000;
      let decision: RouteDecision | string = refused;
      while (typeof decision === 'string' || !decision.accepted) {
        assert.ok(Date.now() < deadline, `still ${JSON.stringify(decision)} after 20 s`);
        await new Promise((resolve) => setTimeout(resolve, 100));
        // A query on one of the forgotten pooled connections fails (SMTP would answer 451); the pool opens others.
        decision = await third.app.router.resolve('late@cluster.test').catch((error: Error) => error.message);
      }
    } finally {
      await third.close();
      await proxy.close();
    }
  });
});
