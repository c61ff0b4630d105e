import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { startWithTwoAccounts, type TwoAccounts } from '../helpers/accounts.ts';
import type { DnsServer } from '../helpers/dns-server.ts';
import { createVerifiedDomain } from '../helpers/domains.ts';
import type { ApiClient } from '../helpers/http.ts';

let world: TwoAccounts;
let dns: DnsServer;
let api: ApiClient;
let other: ApiClient;

before(async () => {
  world = await startWithTwoAccounts();
  ({ dns, api, other } = world);
});
after(() => world.close());

const families = [
  ['e2', 'patch'],
  ['v2', 'put'],
] as const;

describe('includeSubdomains on PATCH /api/e2/domains/{id} and PUT /api/v2/domains/{id}', () => {
  for (const [family, method] of families) {
    const update = (client: ApiClient, id: string, body: unknown) =>
      client[method](`/api/${family}/domains/${id}`, body);

    test(`${family}: enabling on a verified root answers with the wildcard MX record; the domain shows it`, async () => {
      const root = await createVerifiedDomain(api, dns, `wild-${family}.test`);
      const response = await update(api, root.id, { includeSubdomains: true });
      assert.equal(response.status, 200, JSON.stringify(response.body));
      const { updatedAt, ...rest } = response.body;
      assert.equal(typeof updatedAt, 'string');
      assert.deepEqual(rest, {
        id: root.id,
        domain: `wild-${family}.test`,
        status: 'verified',
        isCatchAllEnabled: false,
        catchAllEndpointId: null,
        catchAllEndpoint: null,
        includeSubdomains: true,
        wildcardMxRecord: {
          type: 'MX',
          name: `*.wild-${family}.test`,
          value: '10 mx.mailroom.test',
          description: 'Inbound email routing for subdomains: points mail for every subdomain at Mailroom',
          isRequired: true,
        },
      });
      const read = await api.get(`/api/${family}/domains/${root.id}`);
      assert.equal(read.body.includeSubdomains, true);
      const listed = await api.get(`/api/${family}/domains`);
      assert.equal(listed.body.data.find((d: { id: string }) => d.id === root.id).includeSubdomains, true);

      const off = await update(api, root.id, { includeSubdomains: false });
      assert.equal(off.status, 200);
      assert.deepEqual([off.body.includeSubdomains, off.body.wildcardMxRecord], [false, null]);
      assert.equal((await api.get(`/api/${family}/domains/${root.id}`)).body.includeSubdomains, false);
    });

    test(`${family}: set together with the catch-all; a catch-all change alone keeps includeSubdomains`, async () => {
      const root = await createVerifiedDomain(api, dns, `both-${family}.test`);
      const endpoint = (
        await api.post('/api/v2/endpoints', { name: 'All', type: 'email', config: { forwardTo: 'all@example.com' } })
      ).body;
      const both = await update(api, root.id, {
        isCatchAllEnabled: true,
        catchAllEndpointId: endpoint.id,
        includeSubdomains: true,
      });
      assert.equal(both.status, 200, JSON.stringify(both.body));
      assert.deepEqual(
        [both.body.isCatchAllEnabled, both.body.catchAllEndpointId, both.body.includeSubdomains],
        [true, endpoint.id, true],
      );
      const catchAllOff = await update(api, root.id, { isCatchAllEnabled: false });
      assert.deepEqual(
        [
          catchAllOff.body.isCatchAllEnabled,
          catchAllOff.body.includeSubdomains,
          catchAllOff.body.wildcardMxRecord?.name,
        ],
        [false, true, `*.both-${family}.test`],
      );
    });

    test(`${family}: 400 on a subdomain, whether or not its parent is registered`, async () => {
      await createVerifiedDomain(api, dns, `parent-${family}.test`);
      const registered = (await api.post('/api/v2/domains', { domain: `sub.parent-${family}.test` })).body;
      const response = await update(api, registered.id, { includeSubdomains: true });
      assert.equal(response.status, 400);
      assert.deepEqual(response.body, {
        error: `Subdomains can only be included on a root domain: sub.parent-${family}.test is a subdomain of parent-${family}.test`,
      });

      const alone = await createVerifiedDomain(api, dns, `mail.lone-${family}.co.uk`);
      const refused = await update(api, alone.id, { includeSubdomains: true });
      assert.equal(refused.status, 400);
      assert.deepEqual(refused.body, {
        error: `Subdomains can only be included on a root domain: mail.lone-${family}.co.uk is a subdomain of lone-${family}.co.uk`,
      });
    });

    test(`${family}: 409 when another account owns a subdomain of the root`, async () => {
      // Registered by the other account before anyone verified the root.
      const theirs = await other.post('/api/v2/domains', { domain: `shop.shared-${family}.test` });
      assert.equal(theirs.status, 201);
      const root = await createVerifiedDomain(api, dns, `shared-${family}.test`);
      const response = await update(api, root.id, { includeSubdomains: true });
      assert.equal(response.status, 409);
      assert.deepEqual(response.body, {
        error: 'Cannot include subdomains: another account owns a subdomain of this domain',
        code: 'SUBDOMAIN_BELONGS_TO_ANOTHER_ACCOUNT',
      });
      assert.equal((await api.get(`/api/v2/domains/${root.id}`)).body.includeSubdomains, false);
    });

    test(`${family}: 400 when the domain is not verified`, async () => {
      const pending = (await api.post('/api/v2/domains', { domain: `pending-${family}.test` })).body;
      const response = await update(api, pending.id, { includeSubdomains: true });
      assert.equal(response.status, 400);
      assert.deepEqual(response.body, { error: 'Domain must be verified before including subdomains' });
    });

    test(`${family}: 400 when includeSubdomains is not a boolean`, async () => {
      const root = await createVerifiedDomain(api, dns, `typed-${family}.test`);
      const response = await update(api, root.id, { isCatchAllEnabled: false, includeSubdomains: 'yes' });
      assert.equal(response.status, 400);
      assert.deepEqual(response.body, { error: 'Invalid request: body/includeSubdomains must be boolean' });
    });
  }

  test('another account cannot add a subdomain of a root that includes its subdomains: 409', async () => {
    const root = await createVerifiedDomain(api, dns, 'covered.test');
    await api.put(`/api/v2/domains/${root.id}`, { includeSubdomains: true });
    const response = await other.post('/api/v2/domains', { domain: 'team.covered.test' });
    assert.equal(response.status, 409);
    assert.deepEqual(response.body, {
      error: 'Domain belongs to another account',
      code: 'DOMAIN_BELONGS_TO_ANOTHER_ACCOUNT',
    });
  });

  test('both OpenAPI documents list includeSubdomains in the request and the answer', async () => {
    for (const family of ['e2', 'v2']) {
      const path = `/api/${family}/domains/{id}`;
      const verb = family === 'e2' ? 'patch' : 'put';
      const document = (await api.get(`/api/${family}/openapi.json`)).body;
      const operation = document.paths[path][verb];
      const bodySchema = JSON.stringify(operation.requestBody.content['application/json'].schema);
      assert.match(bodySchema, /"includeSubdomains":\{"type":"boolean"\}/, family);
      const answer = operation.responses['200'].content['application/json'].schema;
      assert.deepEqual(answer.properties.includeSubdomains, { type: 'boolean' }, family);
      assert.ok(answer.properties.wildcardMxRecord, family);
      const domain = document.paths[path].get.responses['200'].content['application/json'].schema;
      assert.deepEqual(domain.properties.includeSubdomains, { type: 'boolean' }, family);
    }
  });
});
