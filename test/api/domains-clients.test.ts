import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { Inbound as InboundSdk } from '@inboundemail/sdk';
import Inbound, { ConflictError, NotFoundError } from 'inboundemail';
import { startTestApp, type TestApp } from '../helpers/app.ts';
import { type DnsServer, startDnsServer } from '../helpers/dns-server.ts';
import { createVerifiedDomain, publishRequiredRecords } from '../helpers/domains.ts';
import { apiClient } from '../helpers/http.ts';

let dns: DnsServer;
let server: TestApp;

before(async () => {
  dns = await startDnsServer();
  server = await startTestApp({ DNS_SERVERS: dns.address });
});
after(async () => {
  await server.close();
  await dns.close();
});

describe('inboundemail (e2) client: domains', () => {
  test('create, list, retrieve with check, update catch-all and delete return typed data matching what was created', async () => {
    const client = new Inbound({ apiKey: server.apiKey, baseURL: server.baseUrl, maxRetries: 0 });

    const created = await client.domains.create({ domain: 'e2-client.test' });
    assert.equal(created.domain, 'e2-client.test');
    assert.equal(created.status, 'pending');
    assert.equal(created.canReceiveEmails, false);
    assert.equal(created.dnsRecords.length, 4);
    assert.equal(created.dnsRecords[1]!.type, 'MX');
    assert.equal(created.dnsConflict?.hasConflict, false);

    const list = await client.domains.list({ limit: 10, status: 'pending' });
    assert.deepEqual(
      list.data.map((d) => d.id),
      [created.id],
    );
    assert.equal(list.pagination.total, 1);
    assert.equal(list.data[0]!.stats.totalEmailAddresses, 0);
    assert.equal(list.data[0]!.userId.startsWith('acc_'), true);

    const verification = created.dnsRecords[0]!;
    dns.set(verification.name, [{ type: 'TXT', data: verification.value }]);
    dns.set('e2-client.test', [{ type: 'MX', exchange: 'mx.mailroom.test', priority: 10 }]);
    const retrieved = await client.domains.retrieve(created.id, { check: 'true' });
    assert.equal(retrieved.id, created.id);
    assert.equal(retrieved.status, 'verified');
    assert.equal(retrieved.verificationCheck?.isFullyVerified, true);
    assert.equal(retrieved.dnsRecords.length, 4);
    assert.equal(retrieved.dnsRecords[0]!.recordType, 'TXT');
    assert.equal(retrieved.stats.emailsLast24h, 0);

    const updated = await client.domains.update(created.id, { isCatchAllEnabled: false, catchAllEndpointId: null });
    assert.equal(updated.isCatchAllEnabled, false);
    assert.equal(updated.catchAllEndpoint, null);

    const deleted = await client.domains.delete(created.id);
    assert.equal(deleted.success, true);
    assert.equal(deleted.deletedResources.domain, 'e2-client.test');
    assert.equal(deleted.deletedResources.dnsRecords, 4);

    await assert.rejects(client.domains.retrieve(created.id), (error) => {
      assert.ok(error instanceof NotFoundError);
      assert.deepEqual(error.error, { error: 'Domain not found' });
      return true;
    });
  });
});

describe('inboundemail (e2) client: conflicts', () => {
  test('a 409 for a duplicate is thrown at once: x-should-retry false keeps the client from sending it again', async () => {
    const requests: string[] = [];
    const client = new Inbound({
      apiKey: server.apiKey,
      baseURL: server.baseUrl,
      fetch: async (input, init) => {
        requests.push(`${init?.method} ${new URL(String(input)).pathname}`);
        return fetch(input, init);
      },
    });
    const created = await client.domains.create({ domain: 'conflict-e2.test' });
    requests.length = 0;
    const conflicts = [
      () => client.domains.create({ domain: 'conflict-e2.test' }),
      () => client.emailAddresses.create({ address: 'a@conflict-e2.test', domainId: created.id }),
    ];
    await client.emailAddresses.create({ address: 'a@conflict-e2.test', domainId: created.id });
    requests.length = 0;
    for (const call of conflicts) {
      await assert.rejects(call(), (error) => {
        assert.ok(error instanceof ConflictError);
        assert.equal(error.headers?.get('x-should-retry'), 'false');
        return true;
      });
    }
    assert.deepEqual(requests, ['POST /api/e2/domains', 'POST /api/e2/email-addresses']);
  });
});

describe('@inboundemail/sdk (v2) client: domains', () => {
  test('domains.create/list/get/update/getDnsRecords/delete return data matching what was created', async () => {
    const sdk = new InboundSdk(server.apiKey, `${server.baseUrl}/api/v2`);
    const api = apiClient(server.baseUrl, server.apiKey);

    const created = await sdk.domains.create({ domain: 'v2-sdk.test' });
    assert.equal(created.error, undefined);
    assert.equal(created.data!.domain, 'v2-sdk.test');
    assert.equal(created.data!.status, 'pending');
    assert.equal(created.data!.dnsRecords.length, 4);
    const id = created.data!.id;

    const list = await sdk.domain.list({ limit: 5 });
    assert.ok(list.data!.data.some((d) => d.id === id));
    assert.equal(list.data!.meta.totalCount, list.data!.pagination.total);

    const got = await sdk.domains.get(id);
    assert.equal(got.data!.id, id);
    assert.equal(got.data!.canReceiveEmails, false);
    assert.equal(got.data!.stats.totalEmailAddresses, 0);

    const records = await sdk.domains.getDnsRecords(id);
    assert.equal(records.data.domainId, id);
    assert.deepEqual(
      records.data.records.map((r: { recordType: string }) => r.recordType),
      ['TXT', 'MX', 'TXT', 'TXT'],
    );

    const refused = await sdk.domains.update(id, { isCatchAllEnabled: true, catchAllEndpointId: 'endp_x' });
    assert.equal(refused.error, 'Domain must be verified before configuring catch-all');

    const verified = await createVerifiedDomain(api, dns, 'v2-sdk-verified.test');
    const off = await sdk.domains.update(verified.id, { isCatchAllEnabled: false, catchAllEndpointId: null });
    assert.equal(off.data!.isCatchAllEnabled, false);
    assert.equal(off.data!.catchAllEndpointId, null);

    const deleted = await sdk.domains.delete(id);
    assert.equal(deleted.data.success, true);
    const missing = await sdk.domains.get(id);
    assert.equal(missing.error, 'Domain not found');

    const unauthorized = await new InboundSdk('mr_wrong', `${server.baseUrl}/api/v2`).domains.list();
    assert.equal(unauthorized.error, 'Unauthorized');
  });
});

/** The SDK declares its domain list type without exporting it. */
type SdkDomainList = NonNullable<Awaited<ReturnType<InboundSdk['domain']['list']>>['data']>;

describe('@inboundemail/sdk (v2) client: domain verification', () => {
  const sdk = () => new InboundSdk(server.apiKey, `${server.baseUrl}/api/v2`);

  test('domain.verify and domain.checkStatus run the DNS check and answer the records and a summary', async () => {
    const created = (await sdk().domain.create({ domain: 'auth-sdk.test' })).data!;
    const [txt, mx, spf, dmarc] = created.dnsRecords.map(({ type, name, value }) => ({ type, name, value }));
    const started = await sdk().domain.verify(created.id);
    assert.deepEqual(started, {
      data: {
        success: true,
        domain: 'auth-sdk.test',
        sesIdentityStatus: null,
        dkimEnabled: false,
        dkimTokens: [],
        mailFromDomain: null,
        mailFromStatus: null,
        records: [
          { ...txt, isRequired: true, isVerified: false, description: 'Domain ownership verification' },
          {
            ...mx,
            priority: 10,
            isRequired: true,
            isVerified: false,
            description: 'Inbound email routing: points mail for the domain at Mailroom',
          },
          {
            ...spf,
            isRequired: false,
            isVerified: false,
            description: 'SPF: lets Mailroom send forwards for the domain (recommended)',
          },
          { ...dmarc, isRequired: false, isVerified: false, description: 'DMARC policy (recommended)' },
        ],
        message: `Publish the records below; Mailroom checks them in the background, or now with PATCH /domains/${created.id}/auth.`,
      },
    });

    const pending = await sdk().domain.checkStatus(created.id);
    const pendingChecked = pending.data.dnsRecords[0].lastChecked;
    assert.match(pendingChecked, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    const unverified = (record: { type: string; name: string; value: string }, isRequired: boolean, error: string) => ({
      ...record,
      isRequired,
      isVerified: false,
      status: 'failed',
      lastChecked: pendingChecked,
      error,
    });
    const noSes = {
      identityStatus: null,
      identityVerified: null,
      dkimStatus: null,
      dkimVerified: null,
      dkimTokens: [],
      mailFromDomain: null,
      mailFromStatus: null,
      mailFromVerified: null,
    };
    assert.deepEqual(pending.data, {
      success: true,
      domain: 'auth-sdk.test',
      overallStatus: 'pending',
      dnsRecords: [
        unverified(txt!, true, 'No TXT records found'),
        unverified(mx!, true, 'No MX records found'),
        unverified(spf!, false, 'No SPF record found'),
        unverified(dmarc!, false, 'No DMARC record found'),
      ],
      sesStatus: noSes,
      summary: { totalRecords: 4, verifiedRecords: 0, requiredRecords: 2, verifiedRequiredRecords: 0 },
      message: '0 of 2 required DNS records are verified.',
      nextSteps: [
        `Publish TXT ${txt!.name} with value ${txt!.value}`,
        `Publish MX ${mx!.name} with value ${mx!.value}`,
      ],
    });

    publishRequiredRecords(
      dns,
      created.dnsRecords as Array<{ type: string; name: string; value: string; isRequired: boolean }>,
    );
    const verified = await sdk().domain.checkStatus(created.id);
    const checked = verified.data.dnsRecords[0].lastChecked;
    assert.deepEqual(verified.data, {
      success: true,
      domain: 'auth-sdk.test',
      overallStatus: 'verified',
      dnsRecords: [
        { ...txt, isRequired: true, isVerified: true, status: 'verified', lastChecked: checked },
        { ...mx, isRequired: true, isVerified: true, status: 'verified', lastChecked: checked },
        { ...unverified(spf!, false, 'No SPF record found'), lastChecked: checked },
        { ...unverified(dmarc!, false, 'No DMARC record found'), lastChecked: checked },
      ],
      sesStatus: noSes,
      summary: { totalRecords: 4, verifiedRecords: 2, requiredRecords: 2, verifiedRequiredRecords: 2 },
      message: 'auth-sdk.test is verified and can receive email.',
    });
    assert.equal((await sdk().domain.get(created.id)).data!.status, 'verified');

    const again = await sdk().domains.verify(created.id);
    assert.equal(
      again.data.message,
      'auth-sdk.test is verified. Mailroom needs no DKIM or MAIL FROM setup to receive mail.',
    );
    assert.deepEqual(await sdk().domain.checkStatus('dom_missing'), { error: 'Domain not found' });
    assert.deepEqual(await sdk().domain.verify('dom_missing'), { error: 'Domain not found' });
  });

  test('domain.list with check gives each verificationCheck record its status and lastChecked', async () => {
    const created = (await sdk().domain.create({ domain: 'list-check.test' })).data!;
    publishRequiredRecords(
      dns,
      created.dnsRecords as Array<{ type: string; name: string; value: string; isRequired: boolean }>,
    );
    const list = await sdk().domain.list({ check: 'true', limit: 100 });
    const typed: SdkDomainList = list.data!;
    const item = typed.data.find((domain) => domain.id === created.id)!;
    const check = item.verificationCheck!;
    const lastChecked = check.lastChecked as unknown as string;
    assert.match(lastChecked, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    const [txt, mx, spf, dmarc] = created.dnsRecords.map(({ type, name, value }) => ({ type, name, value }));
    assert.deepEqual(check, {
      dnsRecords: [
        { ...txt, isVerified: true, status: 'verified', lastChecked },
        { ...mx, isVerified: true, status: 'verified', lastChecked },
        { ...spf, isVerified: false, status: 'failed', lastChecked, error: 'No SPF record found' },
        { ...dmarc, isVerified: false, status: 'failed', lastChecked, error: 'No DMARC record found' },
      ],
      isFullyVerified: true,
      lastChecked,
      sesStatus: 'Success',
    });

    const e2 = new Inbound({ apiKey: server.apiKey, baseURL: server.baseUrl, maxRetries: 0 });
    const e2Item = (await e2.domains.list({ check: 'true', limit: 100 })).data.find((d) => d.id === created.id)!;
    assert.deepEqual(
      e2Item.verificationCheck!.dnsRecords.map((record) => [
        record.type,
        record.isVerified,
        (record as { status?: string }).status,
      ]),
      [
        ['TXT', true, 'verified'],
        ['MX', true, 'verified'],
        ['TXT', false, 'failed'],
        ['TXT', false, 'failed'],
      ],
    );
  });
});
