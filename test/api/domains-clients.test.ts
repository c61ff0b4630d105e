import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { Inbound as InboundSdk } from '@inboundemail/sdk';
import Inbound, { NotFoundError } from 'inboundemail';
import { startTestApp, type TestApp } from '../helpers/app.ts';
import { type DnsServer, startDnsServer } from '../helpers/dns-server.ts';
import { createVerifiedDomain } from '../helpers/domains.ts';
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
