import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { startWithTwoAccounts, type TwoAccounts } from '../helpers/accounts.ts';
import type { DnsServer } from '../helpers/dns-server.ts';
import { createVerifiedDomain } from '../helpers/domains.ts';
import type { ApiClient } from '../helpers/http.ts';

let world: TwoAccounts;
let dns: DnsServer;
/** Owns the verified parents. */
let owner: ApiClient;
/** Tries to take names under them. */
let intruder: ApiClient;

before(async () => {
  world = await startWithTwoAccounts('intruder');
  ({ dns, api: owner, other: intruder } = world);
});
after(() => world.close());

const families = ['e2', 'v2'] as const;

describe("subdomains of another account's verified domain", () => {
  for (const family of families) {
    test(`POST /api/${family}/domains: 409 for a subdomain, at any depth, of a domain another account verified`, async () => {
      await createVerifiedDomain(owner, dns, `squat-${family}.test`);
      for (const domain of [`deeper.squat-${family}.test`, `a.b.squat-${family}.test`]) {
        const refused = await intruder.post(`/api/${family}/domains`, { domain });
        assert.equal(refused.status, 409, domain);
        assert.deepEqual(
          refused.body,
          { error: 'Domain belongs to another account', code: 'DOMAIN_BELONGS_TO_ANOTHER_ACCOUNT' },
          domain,
        );
      }
      // The owner's own subdomain is still free for it, and inherits the verification.
      const own = await owner.post(`/api/${family}/domains`, { domain: `deeper.squat-${family}.test` });
      assert.equal(own.status, 201, JSON.stringify(own.body));
      assert.equal(own.body.status, 'verified');
      assert.equal(own.body.parentDomain, `squat-${family}.test`);
    });

    test(`POST /api/${family}/domains: the verified parent's owner takes over a subdomain another account holds unverified`, async () => {
      // Taken while the parent was not yet verified by anyone, with an address on it.
      const held = await intruder.post('/api/v2/domains', { domain: `deeper.take-${family}.test` });
      assert.equal(held.status, 201);
      assert.equal(held.body.status, 'pending');
      const address = await intruder.post('/api/v2/email-addresses', {
        address: `x@deeper.take-${family}.test`,
        domainId: held.body.id,
      });
      assert.equal(address.status, 201, JSON.stringify(address.body));

      await createVerifiedDomain(owner, dns, `take-${family}.test`);
      const taken = await owner.post(`/api/${family}/domains`, { domain: `deeper.take-${family}.test` });
      assert.equal(taken.status, 201, JSON.stringify(taken.body));
      assert.equal(taken.body.status, 'verified');
      assert.equal(taken.body.parentDomain, `take-${family}.test`);

      // The unverified registration is gone with its address, which the owner may now create.
      const gone = await intruder.get(`/api/v2/domains/${held.body.id}`);
      assert.equal(gone.status, 404);
      assert.deepEqual(gone.body, { error: 'Domain not found' });
      assert.equal((await intruder.get(`/api/v2/email-addresses/${address.body.id}`)).status, 404);
      const ownAddress = await owner.post('/api/v2/email-addresses', {
        address: `x@deeper.take-${family}.test`,
        domainId: taken.body.id,
      });
      assert.equal(ownAddress.status, 201, JSON.stringify(ownAddress.body));
    });
  }

  test('a subdomain another account verified itself is not taken over: 409 DOMAIN_ALREADY_REGISTERED', async () => {
    await createVerifiedDomain(intruder, dns, 'held.keep.test');
    await createVerifiedDomain(owner, dns, 'keep.test');
    const response = await owner.post('/api/v2/domains', { domain: 'held.keep.test' });
    assert.equal(response.status, 409);
    assert.deepEqual(response.body, {
      error:
        'This domain is already registered on our platform. If you believe this is an error or you need to transfer ownership, please contact our support team.',
      code: 'DOMAIN_ALREADY_REGISTERED',
    });
  });
});
