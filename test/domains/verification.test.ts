import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, test } from 'node:test';
import { startTestApp, type TestApp } from '../helpers/app.ts';
import { type DnsServer, startDnsServer } from '../helpers/dns-server.ts';
import { type ApiClient, apiClient } from '../helpers/http.ts';

let dns: DnsServer;
let server: TestApp;
let api: ApiClient;

before(async () => {
  dns = await startDnsServer();
  server = await startTestApp({ DNS_SERVERS: dns.address });
  api = apiClient(server.baseUrl, server.apiKey);
});
after(async () => {
  await server.close();
  await dns.close();
});
beforeEach(() => dns.clear());

function recordsOf(created: { dnsRecords: Array<{ type: string; name: string; value: string }> }) {
  const [verification, mx, spf, dmarc] = created.dnsRecords;
  return { verification: verification!, mx: mx!, spf: spf!, dmarc: dmarc! };
}

describe('domain verification through real DNS', () => {
  test('GET /api/v2/domains/{id}?check=true: pending becomes verified once all 4 records are served', async () => {
    const created = await api.post('/api/v2/domains', { domain: 'verify-me.test' });
    assert.equal(created.status, 201);
    assert.equal(created.body.status, 'pending');
    const { verification, mx, spf, dmarc } = recordsOf(created.body);
    assert.deepEqual(
      created.body.dnsRecords.map((r: { type: string; name: string; isRequired: boolean }) => [
        r.type,
        r.name,
        r.isRequired,
      ]),
      [
        ['TXT', '_mailroom.verify-me.test', true],
        ['MX', 'verify-me.test', true],
        ['TXT', 'verify-me.test', false],
        ['TXT', '_dmarc.verify-me.test', false],
      ],
    );
    assert.match(verification.value, /^mailroom-verification=[0-9a-f]{48}$/);
    assert.equal(mx.value, '10 mx.mailroom.test');
    assert.equal(spf.value, 'v=spf1 a:mx.mailroom.test ~all');
    assert.equal(dmarc.value, 'v=DMARC1; p=none; rua=mailto:dmarc@verify-me.test');

    const before = await api.get(`/api/v2/domains/${created.body.id}?check=true`);
    assert.equal(before.body.status, 'pending');
    assert.equal(before.body.verificationCheck.isFullyVerified, false);

    dns.set('_mailroom.verify-me.test', [{ type: 'TXT', data: verification.value }]);
    dns.set('verify-me.test', [
      { type: 'MX', exchange: 'mx.mailroom.test', priority: 10 },
      { type: 'TXT', data: spf.value },
    ]);
    dns.set('_dmarc.verify-me.test', [{ type: 'TXT', data: dmarc.value }]);

    const checked = await api.get(`/api/v2/domains/${created.body.id}?check=true`);
    assert.equal(checked.status, 200);
    assert.equal(checked.body.status, 'verified');
    assert.equal(checked.body.canReceiveEmails, true);
    assert.equal(checked.body.hasMxRecords, true);
    assert.equal(checked.body.verificationCheck.isFullyVerified, true);
    assert.equal(checked.body.verificationCheck.sesStatus, 'Success');
    assert.deepEqual(
      checked.body.verificationCheck.dnsRecords.map((r: { isVerified: boolean }) => r.isVerified),
      [true, true, true, true],
    );
    assert.deepEqual(
      checked.body.dnsRecords.map((r: { isVerified: boolean }) => r.isVerified),
      [true, true, true, true],
    );
  });

  test('MX pointing at another host leaves the domain pending with an error on the MX record', async () => {
    const created = await api.post('/api/e2/domains', { domain: 'wrong-mx.test' });
    const { verification } = recordsOf(created.body);
    dns.set('_mailroom.wrong-mx.test', [{ type: 'TXT', data: verification.value }]);
    dns.set('wrong-mx.test', [{ type: 'MX', exchange: 'mx.elsewhere.test', priority: 10 }]);
    const checked = await api.get(`/api/e2/domains/${created.body.id}?check=true`);
    assert.equal(checked.body.status, 'pending');
    assert.equal(checked.body.canReceiveEmails, false);
    assert.deepEqual(checked.body.verificationCheck.dnsRecords[1], {
      type: 'MX',
      name: 'wrong-mx.test',
      value: '10 mx.mailroom.test',
      isVerified: false,
      status: 'failed',
      lastChecked: checked.body.verificationCheck.lastChecked,
      error: 'MX points to mx.elsewhere.test, expected mx.mailroom.test',
    });
  });

  test('MX at any priority with upper case and a trailing dot still verifies', async () => {
    const created = await api.post('/api/e2/domains', { domain: 'any-priority.test' });
    const { verification } = recordsOf(created.body);
    dns.set('_mailroom.any-priority.test', [{ type: 'TXT', data: verification.value }]);
    dns.set('any-priority.test', [{ type: 'MX', exchange: 'MX.Mailroom.TEST.', priority: 50 }]);
    const checked = await api.get(`/api/e2/domains/${created.body.id}?check=true`);
    assert.equal(checked.body.status, 'verified');
  });

  test('a verification TXT record split into two strings is joined before comparing', async () => {
    const created = await api.post('/api/v2/domains', { domain: 'split-txt.test' });
    const { verification } = recordsOf(created.body);
    const half = Math.floor(verification.value.length / 2);
    dns.set('_mailroom.split-txt.test', [
      { type: 'TXT', data: [verification.value.slice(0, half), verification.value.slice(half)] },
    ]);
    dns.set('split-txt.test', [{ type: 'MX', exchange: 'mx.mailroom.test', priority: 10 }]);
    const checked = await api.get(`/api/v2/domains/${created.body.id}?check=true`);
    assert.equal(checked.body.verificationCheck.dnsRecords[0].isVerified, true);
    assert.equal(checked.body.status, 'verified');
  });

  test('an SPF record with extra mechanisms verifies when it contains ours', async () => {
    const created = await api.post('/api/v2/domains', { domain: 'spf-extra.test' });
    dns.set('spf-extra.test', [
      { type: 'TXT', data: 'google-site-verification=abc' },
      { type: 'TXT', data: 'v=spf1 include:_spf.google.com a:MX.mailroom.test ip4:192.0.2.1 -all' },
    ]);
    const checked = await api.get(`/api/v2/domains/${created.body.id}?check=true`);
    assert.deepEqual(checked.body.verificationCheck.dnsRecords[2], {
      type: 'TXT',
      name: 'spf-extra.test',
      value: 'v=spf1 a:mx.mailroom.test ~all',
      isVerified: true,
      status: 'verified',
      lastChecked: checked.body.verificationCheck.lastChecked,
    });
  });

  test('an SPF record without our mechanism is reported, not verified', async () => {
    const created = await api.post('/api/v2/domains', { domain: 'spf-missing.test' });
    dns.set('spf-missing.test', [{ type: 'TXT', data: 'v=spf1 include:_spf.google.com -all' }]);
    const checked = await api.get(`/api/v2/domains/${created.body.id}?check=true`);
    assert.equal(checked.body.verificationCheck.dnsRecords[2].isVerified, false);
    assert.equal(checked.body.verificationCheck.dnsRecords[2].error, 'SPF record does not include a:mx.mailroom.test');
  });
});

describe('DNS provider detection from NS records', () => {
  test('a known provider on the domain itself is high confidence', async () => {
    dns.set('on-cloudflare.test', [
      { type: 'NS', ns: 'ada.ns.cloudflare.com' },
      { type: 'NS', ns: 'bob.ns.cloudflare.com' },
    ]);
    const created = await api.post('/api/v2/domains', { domain: 'on-cloudflare.test' });
    assert.equal(created.body.domainProvider, 'Cloudflare');
    assert.equal(created.body.providerConfidence, 'high');
  });

  test('unknown nameservers on the domain are a custom provider with medium confidence', async () => {
    dns.set('self-hosted.test', [{ type: 'NS', ns: 'ns1.self-hosted.test' }]);
    const created = await api.post('/api/v2/domains', { domain: 'self-hosted.test' });
    assert.equal(created.body.domainProvider, 'Custom DNS Provider');
    assert.equal(created.body.providerConfidence, 'medium');
  });

  test("a subdomain without NS inherits its parent's provider with medium confidence", async () => {
    dns.set('parent-r53.test', [{ type: 'NS', ns: 'ns-12.awsdns-01.com' }]);
    const created = await api.post('/api/v2/domains', { domain: 'mail.parent-r53.test' });
    assert.equal(created.body.domainProvider, 'AWS Route 53');
    assert.equal(created.body.providerConfidence, 'medium');
  });

  test('a subdomain whose parent has unknown nameservers is low confidence', async () => {
    dns.set('parent-custom.test', [{ type: 'NS', ns: 'ns1.parent-custom.test' }]);
    const created = await api.post('/api/v2/domains', { domain: 'mail.parent-custom.test' });
    assert.equal(created.body.domainProvider, 'Custom DNS Provider');
    assert.equal(created.body.providerConfidence, 'low');
  });

  test('no NS records anywhere leaves the provider unknown', async () => {
    const created = await api.post('/api/v2/domains', { domain: 'no-ns.test' });
    assert.equal(created.body.domainProvider, null);
    assert.equal(created.body.providerConfidence, null);
  });
});
