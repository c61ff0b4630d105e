import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, test } from 'node:test';
import { startTestApp, type TestApp } from '../helpers/app.ts';
import { type DnsServer, startDnsServer } from '../helpers/dns-server.ts';
import { createVerifiedDomain } from '../helpers/domains.ts';
import { type ApiClient, apiClient } from '../helpers/http.ts';
import { sendMail } from '../helpers/smtp.ts';
import { createForwardEndpoint, routeAddress, waitForDelivery } from './setup.ts';
import { type SmtpSink, startSmtpSink } from './smtp-sink.ts';

/** Forwarding refuses internal destinations: at create/update for literal ones, at delivery for what DNS says. */

const REASON = 'loopback, private, link-local and reserved addresses are not allowed (ALLOW_PRIVATE_DESTINATIONS)';

interface Instance {
  app: TestApp;
  api: ApiClient;
  domainId: string;
  domain: string;
}

let dns: DnsServer;
/** Every forward below that gets through lands here: FORWARD_MX_PORT and SMTP_RELAY_URL both point at it. */
let sink: SmtpSink;
let guarded: Instance;
let counter = 0;
const started: Instance[] = [];

async function startInstance(domain: string, env: Record<string, string>): Promise<Instance> {
  const app = await startTestApp({
    DNS_SERVERS: dns.address,
    DELIVERY_RETRY_SCALE: '0.001',
    FORWARD_MX_PORT: String(sink.port),
    WEBHOOK_ALLOW_PRIVATE: 'false',
    ...env,
  });
  const api = apiClient(app.baseUrl, app.apiKey);
  const instance = { app, api, domain, domainId: (await createVerifiedDomain(api, dns, domain)).id };
  started.push(instance);
  return instance;
}

before(async () => {
  dns = await startDnsServer();
  sink = await startSmtpSink();
  dns.set('mx-loopback.test', [{ type: 'MX', exchange: '127.0.0.1', priority: 10 }]);
  dns.set('mx-localhost.test', [{ type: 'MX', exchange: 'localhost', priority: 10 }]);
  dns.set('mx-metadata.test', [{ type: 'MX', exchange: 'mx.mx-metadata.test', priority: 10 }]);
  dns.set('mx.mx-metadata.test', [{ type: 'A', address: '169.254.169.254' }]);
  dns.set('mx-ipv6.test', [{ type: 'MX', exchange: 'mx.mx-ipv6.test', priority: 10 }]);
  dns.set('mx.mx-ipv6.test', [{ type: 'AAAA', address: '::1' }]);
  dns.set('no-mx.test', [{ type: 'A', address: '127.0.0.1' }]);
  dns.set('mx-documentation.test', [{ type: 'MX', exchange: 'mx.mx-documentation.test', priority: 10 }]);
  dns.set('mx.mx-documentation.test', [{ type: 'A', address: '198.51.100.7' }]);
  dns.set('null-mx.test', [{ type: 'MX', exchange: '.', priority: 0 }]);
  dns.set('private-backup.test', [
    { type: 'MX', exchange: 'mx1.private-backup.test', priority: 10 },
    { type: 'MX', exchange: '127.0.0.1', priority: 20 },
  ]);
  dns.fail('mx1.private-backup.test');
  dns.set('bad-exchange.test', [{ type: 'MX', exchange: '[127.0.0.1]', priority: 10 }]);
  guarded = await startInstance('guarded.test', {});
});
after(async () => {
  for (const instance of started) await instance.app.close();
  await sink.close();
  await dns.close();
});
beforeEach(() => sink.clear());

/** Routes a new address on the instance's domain to a forward endpoint, sends it a message, returns the email id. */
async function forwardOnce(instance: Instance, type: 'email' | 'email_group', config: Record<string, unknown>) {
  counter++;
  const address = `in${counter}@${instance.domain}`;
  const endpoint = await createForwardEndpoint(instance.api, `Forward ${counter}`, type, config);
  await routeAddress(instance.api, address, instance.domainId, { endpointId: endpoint.id });
  const sent = await sendMail({ port: instance.app.smtpPort, from: 'ann@sender.test', to: address, subject: 'Hi' });
  assert.equal(sent.code, 250, sent.response);
  return sent.queuedIds[0]!;
}

const refusedAddress = (address: string) => ({
  error: 'Invalid configuration',
  details: `Forward address must not point to a loopback, private, link-local or metadata address (${address}); set ALLOW_PRIVATE_DESTINATIONS=true to allow private destinations`,
});

describe('forward targets with internal literal domains are refused on create and update', () => {
  const refusals: Array<[string, { email: object; email_group: object }]> = [
    ['x@127.0.0.1', { email: refusedAddress('x@127.0.0.1'), email_group: refusedAddress('x@127.0.0.1') }],
    ['x@[127.0.0.1]', { email: refusedAddress('x@[127.0.0.1]'), email_group: refusedAddress('x@[127.0.0.1]') }],
    [
      'x@[::ffff:127.0.0.1]',
      { email: refusedAddress('x@[::ffff:127.0.0.1]'), email_group: refusedAddress('x@[::ffff:127.0.0.1]') },
    ],
    ['x@0x7f.1', { email: refusedAddress('x@0x7f.1'), email_group: refusedAddress('x@0x7f.1') }],
    [
      'x@169.254.169.254',
      { email: refusedAddress('x@169.254.169.254'), email_group: refusedAddress('x@169.254.169.254') },
    ],
    ['x@api.localhost', { email: refusedAddress('x@api.localhost'), email_group: refusedAddress('x@api.localhost') }],
    ['x@[203.0.113.5]', { email: refusedAddress('x@[203.0.113.5]'), email_group: refusedAddress('x@[203.0.113.5]') }],
    // No dot: the reference's address format refuses it first.
    [
      'x@localhost',
      {
        email: { error: 'Invalid configuration', details: 'Invalid forward-to email address format' },
        email_group: { error: 'Invalid configuration', details: 'Invalid email address in group: x@localhost' },
      },
    ],
  ];
  const configs = (address: string) => ({
    email: { forwardTo: address },
    email_group: { emails: ['ok@partner.test', address] },
  });

  for (const family of ['e2', 'v2'] as const) {
    for (const [address, expected] of refusals) {
      for (const type of ['email', 'email_group'] as const) {
        test(`${family}: POST /endpoints (${type}) refuses ${address}`, async () => {
          const config = configs(address)[type];
          const response = await guarded.api.post(`/api/${family}/endpoints`, { name: 'x', type, config });
          assert.equal(response.status, 400);
          assert.deepEqual(response.body, expected[type]);
        });

        test(`${family}: PUT /endpoints/{id} (${type}) refuses ${address} and keeps the old config`, async () => {
          const created = await guarded.api.post(`/api/${family}/endpoints`, {
            name: 'x',
            type,
            config: type === 'email' ? { forwardTo: 'ok@partner.test' } : { emails: ['ok@partner.test'] },
          });
          assert.equal(created.status, 201, JSON.stringify(created.body));
          const response = await guarded.api.put(`/api/${family}/endpoints/${created.body.id}`, {
            config: configs(address)[type],
          });
          assert.equal(response.status, 400);
          assert.deepEqual(response.body, expected[type]);
          assert.deepEqual(
            (await guarded.api.get(`/api/${family}/endpoints/${created.body.id}`)).body.config,
            created.body.config,
          );
        });
      }
    }
  }
});

describe('direct MX delivery to internal addresses fails and connects nowhere', () => {
  const cases: Array<[string, string]> = [
    ['ops@mx-loopback.test', `127.0.0.1: ${REASON}`],
    ['ops@mx-localhost.test', `localhost resolves to 127.0.0.1: ${REASON}`],
    ['ops@mx-metadata.test', `mx.mx-metadata.test resolves to 169.254.169.254: ${REASON}`],
    ['ops@mx-ipv6.test', `mx.mx-ipv6.test resolves to ::1: ${REASON}`],
    ['ops@no-mx.test', `no-mx.test resolves to 127.0.0.1: ${REASON}`],
    ['ops@mx-documentation.test', `mx.mx-documentation.test resolves to 198.51.100.7: ${REASON}`],
  ];
  for (const [target, reason] of cases) {
    test(`a forward to ${target} fails at once with the reason, and the sink receives nothing`, async () => {
      const emailId = await forwardOnce(guarded, 'email', { forwardTo: target });
      const delivery = await waitForDelivery(guarded.api, emailId);
      assert.equal(delivery.status, 'failed');
      assert.equal(delivery.attempts, 1);
      assert.equal(delivery.lastError, `${target}: ${reason}`);
      assert.deepEqual(delivery.attemptLog[0]!.recipients, [{ address: target, status: 'failed', error: reason }]);
      assert.deepEqual(sink.messages, []);
    });
  }

  test('a primary MX that cannot be looked up now is retried, even when the backup MX is internal', async () => {
    const target = 'ops@private-backup.test';
    const emailId = await forwardOnce(guarded, 'email', { forwardTo: target });
    const delivery = await waitForDelivery(guarded.api, emailId);
    assert.equal(delivery.status, 'failed');
    // The first attempt and the default three retries.
    assert.equal(delivery.attempts, 4);
    for (const attempt of delivery.attemptLog) {
      const [recipient] = attempt.recipients!;
      assert.deepEqual([recipient!.address, recipient!.status], [target, 'failed']);
      // Whichever of the A and AAAA lookups failed first.
      assert.match(recipient!.error!, /^mx1\.private-backup\.test: query(A|Aaaa) ESERVFAIL mx1\.private-backup\.test$/);
    }
    assert.deepEqual(sink.messages, []);
  });

  test('email_group: each internal member fails with its own reason', async () => {
    const emailId = await forwardOnce(guarded, 'email_group', { emails: ['a@mx-localhost.test', 'b@no-mx.test'] });
    const delivery = await waitForDelivery(guarded.api, emailId);
    assert.equal(delivery.status, 'failed');
    assert.deepEqual(delivery.attemptLog[0]!.recipients, [
      { address: 'a@mx-localhost.test', status: 'failed', error: `localhost resolves to 127.0.0.1: ${REASON}` },
      { address: 'b@no-mx.test', status: 'failed', error: `no-mx.test resolves to 127.0.0.1: ${REASON}` },
    ]);
    assert.deepEqual(sink.messages, []);
  });
});

describe('the allow flags lift the forward guard', () => {
  test('ALLOW_PRIVATE_DESTINATIONS=true: the MX "localhost" is delivered to', async () => {
    const open = await startInstance('destinations.test', { ALLOW_PRIVATE_DESTINATIONS: 'true' });
    const emailId = await forwardOnce(open, 'email', { forwardTo: 'ops@mx-localhost.test' });
    assert.equal((await waitForDelivery(open.api, emailId)).status, 'success');
    assert.deepEqual(
      sink.messages.map((m) => m.rcptTo),
      [['ops@mx-localhost.test']],
    );
  });

  test('WEBHOOK_ALLOW_PRIVATE=true: x@127.0.0.1 is accepted and delivered to its implicit MX', async () => {
    const open = await startInstance('webhook-flag.test', { WEBHOOK_ALLOW_PRIVATE: 'true' });
    const emailId = await forwardOnce(open, 'email', { forwardTo: 'x@127.0.0.1' });
    assert.equal((await waitForDelivery(open.api, emailId)).status, 'success');
    assert.deepEqual(
      sink.messages.map((m) => m.rcptTo),
      [['x@127.0.0.1']],
    );
  });

  test('ALLOW_PRIVATE_DESTINATIONS=true: address literals x@[127.0.0.1] and y@[IPv6:::ffff:127.0.0.1] go there', async () => {
    const open = await startInstance('literals.test', { ALLOW_PRIVATE_DESTINATIONS: 'true' });
    const targets = ['x@[127.0.0.1]', 'y@[IPv6:::ffff:127.0.0.1]'];
    const emailId = await forwardOnce(open, 'email_group', { emails: targets });
    const delivery = await waitForDelivery(open.api, emailId);
    assert.equal(delivery.status, 'success', JSON.stringify(delivery.attemptLog));
    assert.deepEqual(sink.messages.map((m) => m.rcptTo[0]).sort(), ['x@[127.0.0.1]', 'y@[IPv6:::ffff:127.0.0.1]']);
  });
});

test('SMTP_RELAY_URL on loopback still carries forwards with the guard on: the operator chose the relay', async () => {
  const relayed = await startInstance('relayed.test', { SMTP_RELAY_URL: sink.url });
  const emailId = await forwardOnce(relayed, 'email', { forwardTo: 'ops@mx-localhost.test' });
  assert.equal((await waitForDelivery(relayed.api, emailId)).status, 'success');
  assert.deepEqual(
    sink.messages.map((m) => m.rcptTo),
    [['ops@mx-localhost.test']],
  );
});

test('a forward to a domain whose null MX (RFC 7505) says it takes no mail fails at once, without retries', async () => {
  const target = 'ops@null-mx.test';
  const emailId = await forwardOnce(guarded, 'email', { forwardTo: target });
  const delivery = await waitForDelivery(guarded.api, emailId);
  assert.equal(delivery.status, 'failed');
  assert.equal(delivery.attempts, 1);
  assert.deepEqual(delivery.attemptLog[0]!.recipients, [
    { address: target, status: 'failed', error: 'null-mx.test accepts no mail (null MX record)' },
  ]);
  assert.deepEqual(sink.messages, []);
});

describe('direct MX delivery to a domain that is not a DNS name', () => {
  const target = 'ops@127.0.0.1:25.test';
  const reason = 'MX lookup for 127.0.0.1:25.test failed: queryMx EBADNAME 127.0.0.1:25.test';

  test('a forward fails at once, without retries', async () => {
    const emailId = await forwardOnce(guarded, 'email', { forwardTo: target });
    const delivery = await waitForDelivery(guarded.api, emailId);
    assert.equal(delivery.status, 'failed');
    assert.equal(delivery.attempts, 1);
    assert.deepEqual(delivery.attemptLog[0]!.recipients, [{ address: target, status: 'failed', error: reason }]);
  });

  test('POST /endpoints/{id}/test answers the failure', async () => {
    const endpoint = await createForwardEndpoint(guarded.api, 'Bad name', 'email', { forwardTo: target });
    const result = await guarded.api.post(`/api/v2/endpoints/${endpoint.id}/test`);
    assert.equal(result.status, 200, JSON.stringify(result.body));
    assert.equal(result.body.success, false);
    assert.equal(result.body.error, `${target}: ${reason}`);
    assert.equal(result.body.message, `Email test failed: ${target}: ${reason}`);
  });
});

test('a forward to a domain whose MX host is not a DNS name fails at once, without retries', async () => {
  const target = 'ops@bad-exchange.test';
  const emailId = await forwardOnce(guarded, 'email', { forwardTo: target });
  const delivery = await waitForDelivery(guarded.api, emailId);
  assert.equal(delivery.status, 'failed');
  assert.equal(delivery.attempts, 1);
  const [recipient] = delivery.attemptLog[0]!.recipients!;
  assert.deepEqual([recipient!.address, recipient!.status], [target, 'failed']);
  // Whichever of the A and AAAA lookups refused the name first.
  assert.match(recipient!.error!, /^\[127\.0\.0\.1\]: query(A|Aaaa) EBADNAME \[127\.0\.0\.1\]$/);
  assert.deepEqual(sink.messages, []);
});
