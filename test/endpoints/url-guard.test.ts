import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { isIP } from 'node:net';
import { networkInterfaces } from 'node:os';
import { after, before, describe, test } from 'node:test';
import { isPrivateAddress } from '../../src/endpoints/index.ts';
import { startTestApp, type TestApp } from '../helpers/app.ts';
import { type DnsServer, startDnsServer } from '../helpers/dns-server.ts';
import { type ApiClient, apiClient } from '../helpers/http.ts';
import { startWebhookReceiver } from '../helpers/webhook-receiver.ts';

let dns: DnsServer;
let guarded: TestApp;
let open: TestApp;
let api: ApiClient;

before(async () => {
  dns = await startDnsServer();
  dns.set('public.hooks.test', [{ type: 'A', address: '93.184.216.34' }]);
  dns.set('internal.hooks.test', [{ type: 'A', address: '10.1.2.3' }]);
  dns.set('mixed.hooks.test', [
    { type: 'A', address: '93.184.216.34' },
    { type: 'AAAA', address: 'fd00::5' },
  ]);
  dns.set('rebind.hooks.test', [{ type: 'A', address: '169.254.169.254' }]);
  guarded = await startTestApp({ DNS_SERVERS: dns.address, WEBHOOK_ALLOW_PRIVATE: 'false' });
  open = await startTestApp({ DNS_SERVERS: dns.address, WEBHOOK_ALLOW_PRIVATE: 'true' });
  api = apiClient(guarded.baseUrl, guarded.apiKey);
});
after(async () => {
  await guarded.close();
  await open.close();
  await dns.close();
});

describe('isPrivateAddress', () => {
  const cases: Array<[string, boolean]> = [
    ['127.0.0.1', true],
    ['127.8.9.10', true],
    ['10.0.0.1', true],
    ['172.16.0.1', true],
    ['172.31.255.255', true],
    ['172.32.0.1', false],
    ['192.168.1.1', true],
    ['169.254.169.254', true],
    ['100.100.100.200', true],
    // Azure's WireServer: a public address that answers only inside Azure, with the VM's goal state and certificates.
    ['168.63.129.16', true],
    ['::ffff:a83f:8110', true],
    ['168.63.129.17', false],
    ['0.0.0.0', true],
    ['224.0.0.1', true],
    ['255.255.255.255', true],
    ['8.8.8.8', false],
    ['93.184.216.34', false],
    ['::1', true],
    ['::', true],
    ['fe80::1', true],
    ['fd00:ec2::254', true],
    ['ff02::1', true],
    ['::ffff:127.0.0.1', true],
    ['::ffff:7f00:1', true],
    ['64:ff9b::a00:1', true],
    ['::ffff:8.8.8.8', false],
    ['::7f00:1', true],
    ['::808:808', false],
    ['2002:7f00:1::', true],
    ['2002:a9fe:a9fe::1', true],
    ['2002:808:808::', false],
    ['::ffff:0:7f00:1', true],
    ['::ffff:0:a00:1', true],
    ['::ffff:0:808:808', false],
    ['64:ff9b::7f00:1', true],
    ['64:ff9b::808:808', false],
    ['64:ff9b:1::a9fe:a9fe', true],
    ['64:ff9b:1:2::c0a8:1', true],
    // Local-use NAT64 may carry its IPv4 address at /48 (127.0.0.1 here) as well as at /96: all of it is refused.
    ['64:ff9b:1::808:808', true],
    ['64:ff9b:1:7f00:0:100:808:808', true],
    // Beside it lies space the IETF keeps reserved, like all of IPv6 outside global unicast (2000::/3).
    ['64:ff9b:2::808:808', true],
    ['4000::1', true],
    ['1::1', true],
    ['0:0:0:1::', true],
    ['e000::1', true],
    ['fe00::1', true],
    ['2a00:1450:4001:81b::200e', false],
    // Teredo's IPv4 addresses are obfuscated.
    ['2001:0:4136:e378:8000:63bf:3fff:fdd2', true],
    ['2606:4700:4700::1111', false],
    // Special-purpose blocks IANA marks not globally reachable: documentation, protocol assignments (192.0.0.0/24),
    // discard, benchmarking (198.18.0.0/15), ORCHID, SRv6.
    ['192.0.2.1', true],
    ['198.51.100.7', true],
    ['203.0.113.9', true],
    ['192.0.0.170', true],
    ['192.0.1.1', false],
    ['198.18.0.1', true],
    ['198.19.255.254', true],
    ['198.20.0.1', false],
    ['2001:db8::1', true],
    ['3fff::1', true],
    ['100::1', true],
    ['100:0:0:1::1', true],
    ['2001:2::1', true],
    ['2001:10::1', true],
    ['5f00::1', true],
    ['2002:cb00:7109::', true],
    ['::ffff:c633:6407', true],
    ['2001:20::1', false],
    ['2001:4860:4860::8888', false],
    ['not-an-ip', true],
  ];
  for (const [ip, expected] of cases) {
    test(`${ip} is ${expected ? 'refused' : 'allowed'}`, () => {
      assert.equal(isPrivateAddress(ip), expected);
    });
  }
});

/** IPv6 spellings that carry a loopback or metadata IPv4 address: IPv4-compatible, 6to4, SIIT and NAT64. */
const embeddedIpv4Urls: Array<[string, string]> = [
  ['http://[::127.0.0.1]/', '::7f00:1'],
  ['http://[2002:7f00:1::]/', '2002:7f00:1::'],
  ['http://[::ffff:0:7f00:1]/', '::ffff:0:7f00:1'],
  ['http://[64:ff9b:1::a9fe:a9fe]/', '64:ff9b:1::a9fe:a9fe'],
  ['http://[64:ff9b:1:a9fe:a9:fe00:808:808]/', '64:ff9b:1:a9fe:a9:fe00:808:808'],
];

/** A name other than `localhost` that this machine's /etc/hosts maps to a loopback or private address, if any. */
function hostsFileName(): { name: string; address: string } | undefined {
  for (const line of readFileSync('/etc/hosts', 'utf8').split('\n')) {
    const [address, ...names] = line.replace(/#.*/, '').trim().split(/\s+/);
    const name = names.find((n) => !/(^|\.)localhost$/i.test(n));
    if (address && name && isIP(address) && isPrivateAddress(address)) return { name, address };
  }
  return undefined;
}

const refused = (host: string) => ({
  error: 'Invalid configuration',
  details: `Webhook URL must not point to a loopback, private, link-local or metadata address (${host}); set ALLOW_PRIVATE_DESTINATIONS=true to allow private destinations`,
});

describe('webhook URLs with WEBHOOK_ALLOW_PRIVATE=false', () => {
  const blocked: Array<[string, string]> = [
    ['http://127.0.0.1:8080/hook', '127.0.0.1'],
    ['http://localhost/hook', 'localhost'],
    ['http://api.localhost/hook', 'api.localhost'],
    ['http://10.0.0.8/hook', '10.0.0.8'],
    ['http://172.20.1.1/hook', '172.20.1.1'],
    ['http://192.168.0.10/hook', '192.168.0.10'],
    ['http://169.254.169.254/latest/meta-data', '169.254.169.254'],
    ['http://metadata.google.internal/computeMetadata/v1/', 'metadata.google.internal'],
    ['http://Metadata.Google.Internal./computeMetadata/v1/', 'metadata.google.internal'],
    ['http://metadata/computeMetadata/v1/', 'metadata'],
    ['http://instance-data/latest/meta-data', 'instance-data'],
    ['http://instance-data.ec2.internal./latest/meta-data', 'instance-data.ec2.internal'],
    ['http://168.63.129.16/machine?comp=goalstate', '168.63.129.16'],
    ['http://[::1]/hook', '::1'],
    ['http://[::ffff:127.0.0.1]/hook', '::ffff:7f00:1'],
    ['http://2130706433/hook', '127.0.0.1'],
    ['http://0x7f.1/hook', '127.0.0.1'],
    ['http://192.0.2.1/hook', '192.0.2.1'],
    ['http://[2001:db8::1]/hook', '2001:db8::1'],
    ['http://[4000::1]/hook', '4000::1'],
    ['http://internal.hooks.test/hook', 'internal.hooks.test resolves to 10.1.2.3'],
    ['http://mixed.hooks.test/hook', 'mixed.hooks.test resolves to fd00::5'],
    ['http://rebind.hooks.test/hook', 'rebind.hooks.test resolves to 169.254.169.254'],
    ...embeddedIpv4Urls,
  ];
  for (const family of ['e2', 'v2'] as const) {
    for (const [url, host] of blocked) {
      test(`${family}: POST /endpoints refuses ${url}`, async () => {
        const response = await api.post(`/api/${family}/endpoints`, { name: 'x', type: 'webhook', config: { url } });
        assert.equal(response.status, 400);
        assert.deepEqual(response.body, refused(host));
      });
    }
  }

  test('a name /etc/hosts maps to an internal address is refused, though DNS does not know it', async (t) => {
    const entry = hostsFileName();
    if (!entry) {
      t.skip('/etc/hosts has no name besides localhost mapped to an internal address');
      return;
    }
    for (const family of ['e2', 'v2']) {
      const url: string = `http://${entry.name}:8080/hook`;
      const response = await api.post(`/api/${family}/endpoints`, { name: 'x', type: 'webhook', config: { url } });
      assert.equal(response.status, 400, url);
      assert.deepEqual(response.body, refused(`${entry.name.toLowerCase()} resolves to ${entry.address}`));
    }
    const legacy = await api.post('/api/v2/webhooks', { name: 'x', url: `http://${entry.name}/hook` });
    assert.equal(legacy.status, 400);
    assert.deepEqual(legacy.body, refused(`${entry.name.toLowerCase()} resolves to ${entry.address}`));
  });

  test('legacy webhooks refuse IPv6 spellings of internal IPv4 addresses', async () => {
    for (const [url, host] of embeddedIpv4Urls) {
      const response = await api.post('/api/v2/webhooks', { name: 'x', url });
      assert.equal(response.status, 400, url);
      assert.deepEqual(response.body, refused(host));
    }
  });

  test('public IP literals, names resolving to public addresses and names that do not resolve are accepted', async () => {
    for (const url of [
      'https://93.184.216.34/hook',
      'https://public.hooks.test/hook',
      'https://unregistered.hooks.test/hook',
    ]) {
      const response = await api.post('/api/v2/endpoints', { name: 'ok', type: 'webhook', config: { url } });
      assert.equal(response.status, 201, url);
    }
  });

  test('POST /endpoints/{id}/test holds overrideUrl to the same rules: 400, and nothing is sent', async () => {
    const created = await api.post('/api/v2/endpoints', {
      name: 'override',
      type: 'webhook',
      config: { url: 'https://public.hooks.test/hook' },
    });
    const format = { error: 'Invalid configuration', details: 'Invalid webhook URL format' };
    for (const [overrideUrl, body] of [
      ['not a url', format],
      ['ftp://public.hooks.test/hook', format],
      ['http://10.0.0.5/hook', refused('10.0.0.5')],
      ['http://internal.hooks.test/hook', refused('internal.hooks.test resolves to 10.1.2.3')],
    ] as const) {
      const response = await api.post(`/api/v2/endpoints/${created.body.id}/test`, { overrideUrl });
      assert.deepEqual([response.status, response.body], [400, body], overrideUrl);
    }
  });

  test('PUT /endpoints/{id} applies the guard to a new config', async () => {
    const created = await api.post('/api/e2/endpoints', {
      name: 'x',
      type: 'webhook',
      config: { url: 'https://public.hooks.test/hook' },
    });
    const response = await api.put(`/api/e2/endpoints/${created.body.id}`, {
      config: { url: 'http://192.168.1.1/hook' },
    });
    assert.equal(response.status, 400);
    assert.deepEqual(response.body, refused('192.168.1.1'));
    assert.equal(
      (await api.get(`/api/e2/endpoints/${created.body.id}`)).body.config.url,
      'https://public.hooks.test/hook',
    );
  });

  test('legacy webhooks get the same guard on create and update', async () => {
    const created = await api.post('/api/v2/webhooks', { name: 'x', url: 'http://127.0.0.1/hook' });
    assert.equal(created.status, 400);
    assert.deepEqual(created.body, refused('127.0.0.1'));
    const ok = await api.post('/api/v2/webhooks', { name: 'x', url: 'https://public.hooks.test/hook' });
    assert.equal(ok.status, 201);
    const updated = await api.put(`/api/v2/webhooks/${ok.body.id}`, { url: 'http://internal.hooks.test/' });
    assert.equal(updated.status, 400);
    assert.deepEqual(updated.body, refused('internal.hooks.test resolves to 10.1.2.3'));
  });

  test('WEBHOOK_ALLOW_PRIVATE=true lifts the guard', async () => {
    const lan = apiClient(open.baseUrl, open.apiKey);
    for (const url of ['http://127.0.0.1:8080/hook', 'http://internal.hooks.test/hook', 'http://localhost/x']) {
      const response = await lan.post('/api/v2/endpoints', { name: 'lan', type: 'webhook', config: { url } });
      assert.equal(response.status, 201, url);
    }
  });
});

describe('webhook deliveries resolve hosts as the guard does: DNS_SERVERS first', () => {
  test('a name only DNS_SERVERS knows is delivered to', async () => {
    const receiver = await startWebhookReceiver();
    try {
      dns.set('receiver.hooks.test', [{ type: 'A', address: '127.0.0.1' }]);
      const lan = apiClient(open.baseUrl, open.apiKey);
      const url = `http://receiver.hooks.test:${receiver.port}/hook`;
      const created = await lan.post('/api/v2/endpoints', { name: 'dns', type: 'webhook', config: { url } });
      assert.equal(created.status, 201, JSON.stringify(created.body));
      const result = await lan.post(`/api/v2/endpoints/${created.body.id}/test`);
      assert.deepEqual([result.body.success, result.body.statusCode], [true, 200], JSON.stringify(result.body));
      assert.equal(receiver.requests.length, 1);
    } finally {
      await receiver.close();
    }
  });

  test('a name whose DNS answer turned internal after it was saved is refused at connect', async () => {
    dns.set('flip.hooks.test', [{ type: 'A', address: '93.184.216.34' }]);
    const created = await api.post('/api/v2/endpoints', {
      name: 'flip',
      type: 'webhook',
      config: { url: 'http://flip.hooks.test/hook' },
    });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    dns.set('flip.hooks.test', [{ type: 'A', address: '127.0.0.1' }]);
    const result = await api.post(`/api/v2/endpoints/${created.body.id}/test`);
    assert.equal(result.body.success, false);
    assert.match(result.body.error, /^flip\.hooks\.test resolves to 127\.0\.0\.1: loopback, private/);
  });
});

test("every address of the machine's own interfaces is refused, public ones too", async () => {
  const own = Object.values(networkInterfaces()).flatMap((addresses) => addresses ?? []);
  for (const { address } of own) {
    assert.equal(isPrivateAddress(address), true, address);
    const host = isIP(address) === 6 ? `[${address}]` : address;
    const response = await api.post('/api/v2/endpoints', {
      name: 'own',
      type: 'webhook',
      config: { url: `http://${host}:8080/hook` },
    });
    assert.equal(response.status, 400, address);
  }
});
