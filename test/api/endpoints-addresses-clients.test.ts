import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { Inbound as InboundSdk } from '@inboundemail/sdk';
import Inbound, { BadRequestError, NotFoundError } from 'inboundemail';
import type {
  EmailAddressCreateResponse,
  EmailAddressListResponse,
  EmailAddressRetrieveResponse,
  EmailAddressUpdateResponse,
} from 'inboundemail/resources/email-addresses';
import type {
  EndpointCreateResponse,
  EndpointDeleteResponse,
  EndpointListResponse,
  EndpointRetrieveResponse,
  EndpointUpdateResponse,
} from 'inboundemail/resources/endpoints';
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

/** The members each typed response declares, required and optional, so a missing or extra field shows. */
const ENDPOINT_KEYS = [
  'config',
  'createdAt',
  'deliveryStats',
  'description',
  'groupEmails',
  'id',
  'isActive',
  'name',
  'type',
  'updatedAt',
  'userId',
];
const ENDPOINT_DETAIL_KEYS = [...ENDPOINT_KEYS, 'associatedEmails', 'catchAllDomains', 'recentDeliveries'].sort();
const ENDPOINT_UPDATE_KEYS = ENDPOINT_KEYS.filter((key) => key !== 'deliveryStats');
const ADDRESS_KEYS = [
  'address',
  'createdAt',
  'domain',
  'domainId',
  'endpointId',
  'id',
  'isActive',
  'isReceiptRuleConfigured',
  'receiptRuleName',
  'routing',
  'updatedAt',
  'userId',
  'webhookId',
];
const keys = (value: object) => Object.keys(value).sort();

describe('inboundemail (e2) client: endpoints and email addresses', () => {
  test('endpoints.* create, list, retrieve, update and delete with typed fields matching', async () => {
    const client = new Inbound({ apiKey: server.apiKey, baseURL: server.baseUrl, maxRetries: 0 });

    const created: EndpointCreateResponse = await client.endpoints.create({
      name: 'Stainless hook',
      type: 'webhook',
      description: 'from the e2 client',
      config: { url: 'https://hooks.example.com/e2', timeout: 15, retryAttempts: 2, headers: { 'X-From': 'e2' } },
    });
    assert.deepEqual(keys(created), ENDPOINT_KEYS);
    assert.equal(created.type, 'webhook');
    assert.equal(created.isActive, true);
    assert.equal(created.groupEmails, null);
    assert.deepEqual(created.deliveryStats, { total: 0, successful: 0, failed: 0, lastDelivery: null });
    const config = created.config as Record<string, unknown>;
    assert.deepEqual(
      [config.url, config.timeout, config.retryAttempts, config.headers],
      ['https://hooks.example.com/e2', 15, 2, { 'X-From': 'e2' }],
    );
    assert.match(String(config.verificationToken), /^[0-9a-f]{64}$/);

    const group = await client.endpoints.create({
      name: 'Stainless group',
      type: 'email_group',
      config: { emails: ['a@example.com', 'b@example.com'], preserveHeaders: true },
    });
    assert.deepEqual(group.groupEmails, ['a@example.com', 'b@example.com']);

    const list: EndpointListResponse = await client.endpoints.list({
      type: 'webhook',
      active: 'true',
      sortBy: 'newest',
    });
    assert.deepEqual(
      list.data.map((e) => e.id),
      [created.id],
    );
    assert.deepEqual(keys(list.data[0]!), ENDPOINT_KEYS);
    assert.deepEqual(list.pagination, { limit: 50, offset: 0, total: 1, hasMore: false });
    const searched = await client.endpoints.list({ search: 'group', limit: 10 });
    assert.deepEqual(
      searched.data.map((e) => e.name),
      ['Stainless group'],
    );

    const read: EndpointRetrieveResponse = await client.endpoints.retrieve(created.id);
    assert.deepEqual(keys(read), ENDPOINT_DETAIL_KEYS);
    assert.deepEqual([read.recentDeliveries, read.associatedEmails, read.catchAllDomains], [[], [], []]);

    const updated: EndpointUpdateResponse = await client.endpoints.update(created.id, {
      name: 'Renamed',
      isActive: false,
      webhookFormat: 'inbound',
      config: { url: 'https://hooks.example.com/e2-v2' },
    });
    assert.deepEqual(keys(updated), ENDPOINT_UPDATE_KEYS);
    assert.deepEqual([updated.name, updated.isActive], ['Renamed', false]);
    assert.equal((updated.config as Record<string, unknown>).verificationToken, config.verificationToken);

    await assert.rejects(
      client.endpoints.create({ name: 'bad', type: 'webhook', config: { url: 'https://x.example.com', timeout: 0 } }),
      (error) => {
        assert.ok(error instanceof BadRequestError);
        assert.deepEqual(error.error, {
          error: 'Invalid configuration',
          details: 'Timeout must be a number between 1 and 300 seconds',
        });
        return true;
      },
    );

    const removed: EndpointDeleteResponse = await client.endpoints.delete(group.id);
    assert.deepEqual(removed, {
      message: 'Endpoint deleted successfully',
      cleanup: {
        emailAddressesUpdated: 0,
        emailAddresses: [],
        domainsUpdated: 0,
        domains: [],
        groupEmailsDeleted: 2,
        deliveriesDeleted: 0,
      },
    });
    await assert.rejects(client.endpoints.retrieve(group.id), (error) => {
      assert.ok(error instanceof NotFoundError);
      assert.deepEqual(error.error, { error: 'Endpoint not found' });
      return true;
    });
  });

  test('emailAddresses.* create, list, retrieve, update and delete with typed fields matching', async () => {
    const client = new Inbound({ apiKey: server.apiKey, baseURL: server.baseUrl, maxRetries: 0 });
    const api = apiClient(server.baseUrl, server.apiKey);
    const domain = await createVerifiedDomain(api, dns, 'e2-addresses.test');
    const endpoint = await client.endpoints.create({
      name: 'Fwd',
      type: 'email',
      config: { forwardTo: 'f@example.com' },
    });

    const created: EmailAddressCreateResponse = await client.emailAddresses.create({
      address: 'Support@E2-Addresses.test',
      domainId: domain.id,
      endpointId: endpoint.id,
    });
    assert.deepEqual(keys(created), ADDRESS_KEYS);
    assert.equal(created.address, 'support@e2-addresses.test');
    assert.equal(created.isReceiptRuleConfigured, true);
    assert.equal(created.receiptRuleName, null);
    assert.equal(created.warning, undefined);
    assert.deepEqual(created.domain, { id: domain.id, name: 'e2-addresses.test', status: 'verified' });
    assert.deepEqual(created.routing, {
      type: 'endpoint',
      id: endpoint.id,
      name: 'Fwd',
      config: { forwardTo: 'f@example.com', includeAttachments: true, email: 'f@example.com' },
      isActive: true,
    });

    const list: EmailAddressListResponse = await client.emailAddresses.list({
      domainId: domain.id,
      isActive: 'true',
      isReceiptRuleConfigured: 'true',
      limit: 10,
    });
    assert.deepEqual(
      list.data.map((a) => a.id),
      [created.id],
    );
    assert.deepEqual(keys(list.data[0]!), ADDRESS_KEYS);
    assert.equal((list.data[0]!.routing as { endpointType?: string }).endpointType, 'email');

    const read: EmailAddressRetrieveResponse = await client.emailAddresses.retrieve(created.id);
    assert.deepEqual(read, created);

    const updated: EmailAddressUpdateResponse = await client.emailAddresses.update(created.id, {
      endpointId: null,
      isActive: false,
    });
    assert.deepEqual(keys(updated), [...ADDRESS_KEYS, 'warning'].sort());
    assert.deepEqual(updated.routing, { type: 'none', id: null, name: null, isActive: false });
    assert.equal(updated.isReceiptRuleConfigured, false);
    assert.equal(updated.warning, 'Email address is inactive: mail to it is rejected until it is activated again');

    await assert.rejects(
      client.emailAddresses.create({
        address: 'x@e2-addresses.test',
        domainId: domain.id,
        endpointId: 'e',
        webhookId: 'w',
      }),
      (error) => {
        assert.ok(error instanceof BadRequestError);
        assert.deepEqual(error.error, { error: 'Cannot specify both endpoint and webhook' });
        return true;
      },
    );

    const removed = await client.emailAddresses.delete(created.id);
    assert.deepEqual(removed, {
      message: 'Email address deleted successfully',
      cleanup: { emailAddress: 'support@e2-addresses.test', domain: 'e2-addresses.test', sesRuleUpdated: false },
    });
    await assert.rejects(client.emailAddresses.retrieve(created.id), NotFoundError);
  });

  test('an empty endpointId, webhookId or catchAllEndpointId means none, in JSON as in a form', async () => {
    const client = new Inbound({ apiKey: server.apiKey, baseURL: server.baseUrl, maxRetries: 0 });
    const api = apiClient(server.baseUrl, server.apiKey);
    const domain = await createVerifiedDomain(api, dns, 'e2-empty-ids.test');
    const endpoint = await client.endpoints.create({
      name: 'Fwd',
      type: 'email',
      config: { forwardTo: 'f@example.com' },
    });
    const none = { type: 'none', id: null, name: null, isActive: false };

    const created = await client.emailAddresses.create({
      address: 'a@e2-empty-ids.test',
      domainId: domain.id,
      webhookId: '',
    });
    assert.deepEqual([created.endpointId, created.webhookId, created.routing], [null, null, none]);

    await client.emailAddresses.update(created.id, { endpointId: endpoint.id });
    const cleared = await client.emailAddresses.update(created.id, { endpointId: '', webhookId: '' });
    assert.deepEqual([cleared.endpointId, cleared.webhookId, cleared.routing], [null, null, none]);

    const catchAll = await client.domains.update(domain.id, { isCatchAllEnabled: false, catchAllEndpointId: '' });
    assert.deepEqual([catchAll.catchAllEndpointId, catchAll.catchAllEndpoint], [null, null]);
  });
});

/** The SDK declares these types without exporting them. */
type SdkEndpointConfig = NonNullable<Awaited<ReturnType<InboundSdk['endpoint']['get']>>['data']>['config'];
type EmailConfig = Extract<SdkEndpointConfig, { email: string }>;
type WebhookConfig = Extract<SdkEndpointConfig, { url: string }>;
type PostEndpointsResponse = NonNullable<Awaited<ReturnType<InboundSdk['endpoint']['create']>>['data']>;

describe('@inboundemail/sdk (v2) client: endpoints and email addresses', () => {
  const sdk = () => new InboundSdk(server.apiKey, `${server.baseUrl}/api/v2`);

  test('endpoint.* create, list, get, update and delete', async () => {
    const client = sdk();
    const created = await client.endpoint.create({
      name: 'SDK hook',
      type: 'webhook',
      config: { url: 'https://hooks.example.com/sdk', timeout: 45, retryAttempts: 1 },
    });
    assert.equal(created.error, undefined);
    const endpoint = created.data!;
    assert.deepEqual(
      [endpoint.name, endpoint.type, endpoint.isActive, endpoint.description],
      ['SDK hook', 'webhook', true, null],
    );
    assert.equal(typeof endpoint.createdAt, 'string');
    const config = endpoint.config as {
      url: string;
      timeout: number;
      retryAttempts: number;
      verificationToken?: string;
    };
    assert.deepEqual([config.url, config.timeout, config.retryAttempts], ['https://hooks.example.com/sdk', 45, 1]);
    assert.match(config.verificationToken!, /^[0-9a-f]{64}$/);

    const list = await client.endpoint.list({ type: 'webhook', active: 'true', limit: 5 });
    assert.ok(list.data!.data.some((e) => e.id === endpoint.id));
    assert.equal(list.data!.pagination.limit, 5);

    const read = await client.endpoint.get(endpoint.id);
    assert.deepEqual(read.data!.deliveryStats, { total: 0, successful: 0, failed: 0, lastDelivery: null });
    assert.deepEqual(read.data!.recentDeliveries, []);

    const updated = await client.endpoint.update(endpoint.id, { description: 'edited', isActive: false });
    assert.deepEqual([updated.data!.description, updated.data!.isActive], ['edited', false]);

    const invalid = await client.endpoint.create({ name: 'x', type: 'email', config: { email: 'not-an-address' } });
    assert.equal(invalid.error, 'Invalid configuration');

    const removed = await client.endpoint.delete(endpoint.id);
    assert.equal(removed.data!.message, 'Endpoint deleted successfully');
    assert.equal(removed.data!.cleanup.deliveriesDeleted, 0);
    assert.equal((await client.endpoint.get(endpoint.id)).error, 'Endpoint not found');
  });

  test('createForwarder sends { email } and gets an email endpoint whose config has the typed `email`', async () => {
    const forwarder = await sdk().createForwarder('support@example.com', 'Me@Example.org');
    assert.equal(forwarder.error, undefined);
    assert.equal(forwarder.data.name, 'Forward support@example.com to Me@Example.org');
    assert.equal(forwarder.data.type, 'email');
    const config = { forwardTo: 'me@example.org', includeAttachments: true, email: 'me@example.org' };
    assert.deepEqual(forwarder.data.config, config);
    const read = await sdk().endpoint.get(forwarder.data.id);
    const typed: EmailConfig = read.data!.config as EmailConfig;
    assert.equal(typed.email, 'me@example.org');
    assert.deepEqual(read.data!.config, config);
    const listed = await sdk().endpoint.list({ type: 'email', limit: 50 });
    assert.deepEqual(listed.data!.data.find((e) => e.id === forwarder.data.id)!.config, config);
    const updated = await sdk().endpoint.update(forwarder.data.id, { config: { email: 'You@Example.org' } });
    assert.deepEqual(updated.data!.config, {
      forwardTo: 'you@example.org',
      includeAttachments: true,
      email: 'you@example.org',
    });
  });

  test('setupDomain creates the domain and its webhook, reading timeout 30000 (ms) as 30 seconds', async () => {
    const setup = await sdk().setupDomain('sdk-setup.test', 'https://hooks.example.com/setup');
    assert.equal(setup.error, undefined);
    assert.equal(setup.data.domain.domain, 'sdk-setup.test');
    const endpoint: PostEndpointsResponse = setup.data.endpoint;
    assert.equal(endpoint.name, 'sdk-setup.test Webhook');
    const { verificationToken, ...config } = endpoint.config as WebhookConfig;
    assert.deepEqual(config, { url: 'https://hooks.example.com/setup', timeout: 30, retryAttempts: 3 });
    assert.match(verificationToken!, /^[0-9a-f]{64}$/);
  });

  test('email.address.* create, list, get, update and delete', async () => {
    const client = sdk();
    const api = apiClient(server.baseUrl, server.apiKey);
    const domain = await createVerifiedDomain(api, dns, 'sdk-addresses.test');
    const webhook = await api.post('/api/v2/webhooks', { name: 'Legacy', url: 'https://legacy.example.com' });

    const created = await client.email.address.create({ address: 'hello@sdk-addresses.test', domainId: domain.id });
    assert.equal(created.error, undefined);
    const address = created.data!;
    assert.deepEqual(
      [address.address, address.domainId, address.endpointId, address.isActive],
      ['hello@sdk-addresses.test', domain.id, null, true],
    );
    assert.equal(address.domain.name, 'sdk-addresses.test');
    assert.equal(address.routing.type, 'none');

    const list = await client.email.address.list({ domainId: domain.id, isActive: 'true' });
    assert.deepEqual(
      list.data!.data.map((a) => a.address),
      ['hello@sdk-addresses.test'],
    );
    assert.equal(list.data!.data[0]!.isReceiptRuleConfigured, true);

    const updated = await client.email.address.update(address.id, { webhookId: webhook.body.id });
    assert.equal(updated.data!.routing.type, 'webhook');
    const read = await client.email.address.get(address.id);
    assert.deepEqual(
      [read.data!.routing.type, read.data!.routing.id, read.data!.routing.name, read.data!.routing.isActive],
      ['webhook', webhook.body.id, 'Legacy', true],
    );

    const both = await client.email.address.update(address.id, { endpointId: 'endp_x', webhookId: 'whk_x' });
    assert.equal(both.error, 'Cannot specify both endpoint and webhook');

    const removed = await client.email.address.delete(address.id);
    assert.deepEqual(removed.data, {
      message: 'Email address deleted successfully',
      cleanup: { emailAddress: 'hello@sdk-addresses.test', domain: 'sdk-addresses.test', sesRuleUpdated: false },
    });
    assert.equal((await client.email.address.get(address.id)).error, 'Email address not found');
  });
});
