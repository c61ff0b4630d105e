import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { createWebhookEndpoint, routeAddress } from '../delivery/setup.ts';
import { startTestApp, type TestApp } from '../helpers/app.ts';
import { type DnsServer, startDnsServer } from '../helpers/dns-server.ts';
import { createVerifiedDomain } from '../helpers/domains.ts';
import { type ApiClient, apiClient } from '../helpers/http.ts';
import { sendMail } from '../helpers/smtp.ts';

let dns: DnsServer;
let server: TestApp;
let api: ApiClient;
let stranger: ApiClient;
let domainId: string;
let hook: { id: string };
let strangersHook: { id: string };

before(async () => {
  dns = await startDnsServer();
  server = await startTestApp({ DNS_SERVERS: dns.address });
  api = apiClient(server.baseUrl, server.apiKey);
  stranger = apiClient(server.baseUrl, await server.newAccountKey('stranger'));
  domainId = (await createVerifiedDomain(api, dns, 'guard.test')).id;
  await createVerifiedDomain(stranger, dns, 'theirs.test');
  hook = await createWebhookEndpoint(api, 'Hook', { url: 'https://hook.example.com/in' });
  strangersHook = await createWebhookEndpoint(stranger, 'Theirs', { url: 'https://theirs.example.com/in' });
});
after(async () => {
  await server.close();
  await dns.close();
});

const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;

function withoutTimes(rule: Record<string, unknown>) {
  const { createdAt, updatedAt, ...rest } = rule;
  assert.match(String(createdAt), ISO);
  assert.match(String(updatedAt), ISO);
  return rest;
}

describe('/api/e2/guard', () => {
  test('POST then GET: the rule as stored, with defaults (active, priority 100)', async () => {
    const created = await api.post('/api/e2/guard', {
      name: ' Spam words ',
      conditions: {
        subject: { operator: 'contains', value: 'lottery' },
        spf: ['fail', 'softfail', 'fail'],
      },
      action: { type: 'tag', tag: 'spam' },
    });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    assert.match(created.body.id, /^rule_[0-9a-z]{26}$/);
    assert.deepEqual(withoutTimes(created.body), {
      id: created.body.id,
      name: 'Spam words',
      description: null,
      isActive: true,
      priority: 100,
      conditions: { subject: { operator: 'contains', value: 'lottery' }, spf: ['fail', 'softfail'] },
      action: { type: 'tag', tag: 'spam' },
    });
    const read = await api.get(`/api/e2/guard/${created.body.id}`);
    assert.deepEqual(read.body, created.body);
  });

  test('GET lists in running order (priority, then creation) with pagination', async () => {
    const late = await api.post('/api/e2/guard', {
      name: 'Late',
      priority: 500,
      conditions: { hasAttachment: true },
      action: { type: 'block' },
    });
    const early = await api.post('/api/e2/guard', {
      name: 'Early',
      priority: 0,
      conditions: { hasAttachment: true },
      action: { type: 'block' },
    });
    const list = await api.get('/api/e2/guard?limit=2');
    assert.equal(list.status, 200);
    assert.deepEqual(
      list.body.data.map((rule: { name: string }) => rule.name),
      ['Early', 'Spam words'],
    );
    assert.deepEqual(list.body.pagination, { limit: 2, offset: 0, total: 3, hasMore: true });
    const rest = await api.get('/api/e2/guard?limit=2&offset=2');
    assert.deepEqual(
      rest.body.data.map((rule: { id: string }) => rule.id),
      [late.body.id],
    );
    await api.delete(`/api/e2/guard/${late.body.id}`);
    await api.delete(`/api/e2/guard/${early.body.id}`);
  });

  test('PUT changes only the fields sent; DELETE removes, then 404', async () => {
    const created = await api.post('/api/e2/guard', {
      name: 'To change',
      description: 'first',
      conditions: { sender: { operator: 'exact', value: 'a@b.test' } },
      action: { type: 'block' },
    });
    const updated = await api.put(`/api/e2/guard/${created.body.id}`, {
      priority: 7,
      isActive: false,
      action: { type: 'route', endpointId: hook.id },
    });
    assert.equal(updated.status, 200, JSON.stringify(updated.body));
    assert.deepEqual(withoutTimes(updated.body), {
      id: created.body.id,
      name: 'To change',
      description: 'first',
      isActive: false,
      priority: 7,
      conditions: { sender: { operator: 'exact', value: 'a@b.test' } },
      action: { type: 'route', endpointId: hook.id },
    });
    const deleted = await api.delete(`/api/e2/guard/${created.body.id}`);
    assert.equal(deleted.status, 200);
    assert.deepEqual(deleted.body, { success: true, id: created.body.id });
    const gone = await api.get(`/api/e2/guard/${created.body.id}`);
    assert.equal(gone.status, 404);
    assert.deepEqual(gone.body, { error: 'Rule not found' });
    assert.deepEqual((await api.delete(`/api/e2/guard/${created.body.id}`)).body, { error: 'Rule not found' });
  });

  const invalid: Array<[string, Record<string, unknown>, string]> = [
    ['no conditions', { name: 'x', conditions: {}, action: { type: 'block' } }, 'At least one condition is required'],
    [
      'an invalid regex',
      { name: 'x', conditions: { subject: { operator: 'regex', value: '(' } }, action: { type: 'block' } },
      'conditions.subject: invalid regex (Invalid regular expression: /(/l: Unterminated group)',
    ],
    [
      'a regex that could backtrack (backreference)',
      { name: 'x', conditions: { subject: { operator: 'regex', value: '(a+)\\1' } }, action: { type: 'block' } },
      'conditions.subject: invalid regex (Invalid regular expression: /(a+)\\1/l: Cannot be executed in linear time)',
    ],
    [
      'a pattern longer than 256 characters',
      { name: 'x', conditions: { subject: { operator: 'regex', value: 'a'.repeat(257) } }, action: { type: 'block' } },
      'conditions.subject: value must be at most 256 characters',
    ],
    [
      'a route to another account’s endpoint',
      { name: 'x', conditions: { hasAttachment: true }, action: { type: 'route', endpointId: 'placeholder' } },
      'Endpoint not found or does not belong to user',
    ],
    ['no name', { conditions: { hasAttachment: true }, action: { type: 'block' } }, 'name must be 1 to 200 characters'],
    [
      'a priority below 0',
      { name: 'x', priority: -1, conditions: { hasAttachment: true }, action: { type: 'block' } },
      'priority must be an integer from 0 to 1000000',
    ],
  ];
  for (const [what, body, error] of invalid) {
    test(`POST: 400 for ${what}`, async () => {
      const sent =
        (body.action as { endpointId?: string }).endpointId === 'placeholder'
          ? { ...body, action: { type: 'route', endpointId: strangersHook.id } }
          : body;
      const response = await api.post('/api/e2/guard', sent);
      assert.equal(response.status, 400);
      assert.deepEqual(response.body, { error });
    });
  }

  test('POST: 400 from the schema for an unknown operator', async () => {
    const response = await api.post('/api/e2/guard', {
      name: 'x',
      conditions: { subject: { operator: 'glob', value: 'x' } },
      action: { type: 'block' },
    });
    assert.equal(response.status, 400);
    assert.match(response.body.error, /^Invalid request: body\/conditions\/subject\/operator /);
  });

  test('POST and PUT: 400 naming a condition the schema does not know, which would otherwise widen the rule', async () => {
    const body = { name: 'x', conditions: { hasAttachment: true, subjct: { operator: 'contains', value: 'x' } } };
    const created = await api.post('/api/e2/guard', { ...body, action: { type: 'block' } });
    assert.equal(created.status, 400);
    assert.deepEqual(created.body, { error: 'Invalid request: body/conditions/subjct is not a known property' });
    const rule = await api.post('/api/e2/guard', {
      name: 'x',
      conditions: { hasAttachment: true },
      action: { type: 'tag', tag: 't' },
    });
    const changed = await api.put(`/api/e2/guard/${rule.body.id}`, { conditions: body.conditions });
    assert.equal(changed.status, 400);
    assert.deepEqual(changed.body, { error: 'Invalid request: body/conditions/subjct is not a known property' });
    assert.deepEqual((await api.get(`/api/e2/guard/${rule.body.id}`)).body.conditions, { hasAttachment: true });
  });

  test('another account’s rule is 404 for GET, PUT, DELETE and check, and absent from its list', async () => {
    const mine = await api.post('/api/e2/guard', {
      name: 'Mine',
      conditions: { hasAttachment: false },
      action: { type: 'block' },
    });
    const id = mine.body.id;
    for (const response of [
      await stranger.get(`/api/e2/guard/${id}`),
      await stranger.put(`/api/e2/guard/${id}`, { name: 'Stolen' }),
      await stranger.delete(`/api/e2/guard/${id}`),
      await stranger.post(`/api/e2/guard/${id}/check`, { emailId: 'email_x' }),
    ]) {
      assert.equal(response.status, 404);
      assert.deepEqual(response.body, { error: 'Rule not found' });
    }
    assert.deepEqual((await stranger.get('/api/e2/guard')).body.data, []);
    await api.delete(`/api/e2/guard/${id}`);
  });

  test('POST /guard/generate: 501 with x-should-retry: false', async () => {
    const response = await api.post('/api/e2/guard/generate', { prompt: 'block spam' });
    assert.equal(response.status, 501);
    assert.equal(response.headers.get('x-should-retry'), 'false');
    assert.deepEqual(response.body, {
      error: 'Generating rules from a prompt is not supported: create the rule with its conditions',
    });
  });

  test('POST /guard/{id}/check answers condition by condition for a stored email; 404 for another account’s email', async () => {
    const to = 'checked@guard.test';
    await routeAddress(api, to, domainId, { endpointId: hook.id });
    const sent = await sendMail({
      port: server.smtpPort,
      from: 'news@letters.test',
      to,
      subject: 'Weekly digest',
      headers: { 'List-Id': '<weekly.letters.test>' },
    });
    assert.equal(sent.code, 250, sent.response);
    const emailId = sent.queuedIds[0]!;
    const rule = await api.post('/api/e2/guard', {
      name: 'Newsletters',
      conditions: {
        senderDomain: { operator: 'wildcard', value: '*.test' },
        subject: { operator: 'regex', value: '^Weekly' },
        headers: [{ name: 'list-id', value: { operator: 'contains', value: 'letters.test' } }],
        hasAttachment: true,
        dmarc: ['pass'],
      },
      action: { type: 'tag', tag: 'news' },
    });
    const check = await api.post(`/api/e2/guard/${rule.body.id}/check`, { emailId });
    assert.equal(check.status, 200, JSON.stringify(check.body));
    assert.deepEqual(check.body, {
      ruleId: rule.body.id,
      emailId,
      matched: false,
      action: { type: 'tag', tag: 'news' },
      conditions: [
        { condition: 'senderDomain', matched: true },
        { condition: 'subject', matched: true },
        { condition: 'headers', matched: true },
        { condition: 'hasAttachment', matched: false },
        { condition: 'dmarc', matched: false },
      ],
    });
    const theirRule = await stranger.post('/api/e2/guard', {
      name: 'Theirs',
      conditions: { hasAttachment: false },
      action: { type: 'block' },
    });
    const foreign = await stranger.post(`/api/e2/guard/${theirRule.body.id}/check`, { emailId });
    assert.equal(foreign.status, 404);
    assert.deepEqual(foreign.body, { error: 'Email not found' });
    const missing = await api.post(`/api/e2/guard/${rule.body.id}/check`, {});
    assert.equal(missing.status, 400);
    assert.deepEqual(missing.body, { error: 'emailId is required' });
  });
});

describe('/api/e2/blocklist', () => {
  test('POST adds (lower-cased), GET lists newest first, a second add is 409, unblock removes, then 404', async () => {
    const first = await api.post('/api/e2/blocklist', { emailAddress: 'Pest@Example.test' });
    assert.equal(first.status, 201);
    assert.match(first.body.id, /^blk_[0-9a-z]{26}$/);
    assert.deepEqual(Object.keys(first.body).sort(), ['createdAt', 'emailAddress', 'id']);
    assert.equal(first.body.emailAddress, 'pest@example.test');
    const second = await api.post('/api/e2/blocklist', { emailAddress: '*@junk.test' });
    const list = await api.get('/api/e2/blocklist');
    assert.equal(list.status, 200);
    assert.deepEqual(list.body, {
      data: [second.body, first.body],
      pagination: { limit: 50, offset: 0, total: 2, hasMore: false },
    });
    const again = await api.post('/api/e2/blocklist', { emailAddress: 'pest@example.test' });
    assert.equal(again.status, 409);
    assert.deepEqual(again.body, { error: 'Email address is already blocked' });
    assert.deepEqual((await stranger.get('/api/e2/blocklist')).body.data, []);
    const strangerUnblock = await stranger.post('/api/e2/blocklist/unblock', { emailAddress: 'pest@example.test' });
    assert.equal(strangerUnblock.status, 404);
    const unblocked = await api.post('/api/e2/blocklist/unblock', { emailAddress: 'PEST@example.test' });
    assert.equal(unblocked.status, 200);
    assert.deepEqual(unblocked.body, { success: true, emailAddress: 'pest@example.test' });
    const gone = await api.post('/api/e2/blocklist/unblock', { emailAddress: 'pest@example.test' });
    assert.equal(gone.status, 404);
    assert.deepEqual(gone.body, { error: 'Email address is not blocked' });
    await api.post('/api/e2/blocklist/unblock', { emailAddress: '*@junk.test' });
  });

  for (const [body, error] of [
    [{}, 'emailAddress is required'],
    [{ emailAddress: 'not an address' }, 'emailAddress must be an email address or *@domain'],
    [{ emailAddress: 'a*b@x.test' }, 'emailAddress must be an email address or *@domain'],
  ] as const) {
    test(`POST: 400 "${error}" for ${JSON.stringify(body)}`, async () => {
      const response = await api.post('/api/e2/blocklist', body);
      assert.equal(response.status, 400);
      assert.deepEqual(response.body, { error });
    });
  }
});

describe('POST /api/v2/routing/explain', () => {
  test('an address routed to an endpoint, with a rule and a blocklist entry that fire on the given sender', async () => {
    const to = 'explained@guard.test';
    const address = await routeAddress(api, to, domainId, { endpointId: hook.id });
    const rule = await api.post('/api/e2/guard', {
      name: 'Explained tag',
      conditions: {
        recipient: { operator: 'exact', value: to },
        headers: [{ name: 'X-Kind', value: { operator: 'exact', value: 'report' } }],
      },
      action: { type: 'tag', tag: 'report' },
    });
    const verdictRule = await api.post('/api/e2/guard', {
      name: 'Needs a verdict',
      conditions: { recipient: { operator: 'exact', value: to }, spf: ['none', 'pass', 'fail'] },
      action: { type: 'block' },
    });
    const plain = await api.post('/api/v2/routing/explain', {
      recipient: 'Explained@Guard.test',
      from: 'ann@sender.test',
      subject: 'Q3',
      headers: { 'x-kind': 'report' },
    });
    assert.equal(plain.status, 200, JSON.stringify(plain.body));
    assert.deepEqual(plain.body, {
      recipient: to,
      accepted: true,
      rejection: null,
      matchedBy: 'address',
      domainId,
      addressId: address.id,
      rules: [
        { ruleId: rule.body.id, name: 'Explained tag', source: 'rule', action: 'tag', applied: true, tag: 'report' },
      ],
      blocked: false,
      blocklistEntry: null,
      tags: ['report'],
      target: { id: hook.id, name: 'Hook', type: 'webhook' },
    });
    const entry = await api.post('/api/e2/blocklist', { emailAddress: 'ann@sender.test' });
    const blocked = await api.post('/api/v2/routing/explain', { recipient: to, from: 'ANN@sender.test' });
    assert.deepEqual(blocked.body, {
      recipient: to,
      accepted: true,
      rejection: null,
      matchedBy: 'address',
      domainId,
      addressId: address.id,
      rules: [{ ruleId: entry.body.id, name: 'ann@sender.test', source: 'blocklist', action: 'block', applied: true }],
      blocked: true,
      blocklistEntry: { id: entry.body.id, emailAddress: 'ann@sender.test' },
      tags: [],
      target: null,
    });
    await api.post('/api/e2/blocklist/unblock', { emailAddress: 'ann@sender.test' });
    await api.delete(`/api/e2/guard/${rule.body.id}`);
    await api.delete(`/api/e2/guard/${verdictRule.body.id}`);
  });

  test('refused recipients: the reason and the SMTP reply RCPT would get', async () => {
    const unknown = await api.post('/api/v2/routing/explain', { recipient: 'nobody@guard.test' });
    assert.equal(unknown.status, 200);
    assert.deepEqual(unknown.body, {
      recipient: 'nobody@guard.test',
      accepted: false,
      rejection: {
        reason: 'unknown_address',
        code: 550,
        message: '5.1.1 <nobody@guard.test>: Recipient address rejected: User unknown',
      },
      matchedBy: null,
      domainId: null,
      addressId: null,
      rules: [],
      blocked: false,
      blocklistEntry: null,
      tags: [],
      target: null,
    });
    const relay = await api.post('/api/v2/routing/explain', { recipient: 'someone@elsewhere.test' });
    assert.deepEqual(relay.body.rejection, { reason: 'unknown_domain', code: 550, message: '5.7.1 Relaying denied' });
    const smtp = await sendMail({ port: server.smtpPort, to: 'nobody@guard.test' });
    assert.equal(smtp.response, '550 5.1.1 <nobody@guard.test>: Recipient address rejected: User unknown');
  });

  test('wildcard: a pattern that backtracks as one regex answers promptly, with `*` and the rest as before', async () => {
    const to = 'wild@guard.test';
    await routeAddress(api, to, domainId, { endpointId: hook.id });
    /** Whether a wildcard rule on the x-probe header matches `value`, through a dry run. */
    async function matches(pattern: string, value: string) {
      const rule = await api.post('/api/e2/guard', {
        name: `Wildcard ${pattern}`,
        conditions: {
          recipient: { operator: 'exact', value: to },
          headers: [{ name: 'X-Probe', value: { operator: 'wildcard', value: pattern } }],
        },
        action: { type: 'tag', tag: 'wild' },
      });
      assert.equal(rule.status, 201, JSON.stringify(rule.body));
      const explained = await api.post('/api/v2/routing/explain', { recipient: to, headers: { 'x-probe': value } });
      await api.delete(`/api/e2/guard/${rule.body.id}`);
      assert.equal(explained.status, 200, JSON.stringify(explained.body));
      return explained.body.tags.includes('wild') as boolean;
    }
    // As ^.*a.*a.*a.*a.*a.*a.*b$ this took seconds at 60 characters and would take far longer than the test timeout.
    const hostile = '*a*a*a*a*a*a*b';
    assert.equal(await matches(hostile, 'a'.repeat(5000)), false);
    assert.equal(await matches(hostile, `${'a'.repeat(4999)}b`), true);
    for (const [pattern, value, expected] of [
      ['ab*', 'ab', true],
      ['*ab', 'AB', true],
      ['a*b', 'ab', true],
      ['a*a', 'a', false],
      ['*ab*ab*', 'aab', false],
      ['*ab*ab*', 'xabyABz', true],
      ['first*last', 'first\nmiddle\r\nlast', true],
      ['HELLO*World', 'hello big wORLD', true],
      ['abc', 'abcd', false],
      ['*abc', 'abcd', false],
      ['bc*', 'abc', false],
      ['what?', 'what?', true],
      ['what?', 'whats', false],
      ['wh?t', 'what', false],
      ['a.b', 'axb', false],
      ['a.b', 'A.B', true],
      ['a+b', 'aab', false],
      ['(x)*[y]{2}', '(X) and [Y]{2}', true],
      ['^a$|\\b*', '^A$|\\b and more', true],
    ] as const) {
      assert.equal(await matches(pattern, value), expected, `${pattern} on ${JSON.stringify(value)}`);
    }
  });

  test('regex: searched in the first 16,384 characters of a value', async () => {
    const to = 'long@guard.test';
    await routeAddress(api, to, domainId, { endpointId: hook.id });
    const rule = await api.post('/api/e2/guard', {
      name: 'Needle',
      conditions: { recipient: { operator: 'exact', value: to }, subject: { operator: 'regex', value: 'needle$' } },
      action: { type: 'tag', tag: 'needle' },
    });
    assert.equal(rule.status, 201, JSON.stringify(rule.body));
    const tagged = async (subject: string) =>
      (await api.post('/api/v2/routing/explain', { recipient: to, subject })).body.tags.includes('needle');
    assert.equal(await tagged(`${'x'.repeat(16_378)}needle`), true);
    assert.equal(await tagged(`${'x'.repeat(16_379)}needle`), false);
    await api.delete(`/api/e2/guard/${rule.body.id}`);
  });

  test('regex: a repeated header is searched 16,384 characters in all, not 16,384 per value', async () => {
    const to = 'traced@guard.test';
    await routeAddress(api, to, domainId, { endpointId: hook.id });
    const rule = await api.post('/api/e2/guard', {
      name: 'Trace',
      conditions: { headers: [{ name: 'x-trace', value: { operator: 'regex', value: '^needle$' } }] },
      action: { type: 'tag', tag: 'trace' },
    });
    assert.equal(rule.status, 201, JSON.stringify(rule.body));
    // Values of 900 characters: the needle after 5 of them (4,500) is searched, after 19 (17,100) it is not.
    const headersMatched = async (before: number) => {
      const traces = [...Array.from({ length: before }, () => 'x'.repeat(900)), 'needle'];
      const raw = [
        'From: ann@sender.test',
        `To: ${to}`,
        'Subject: Traced',
        ...traces.map((value) => `X-Trace: ${value}`),
        '',
        'Hello',
        '',
      ].join('\r\n');
      const sent = await sendMail({ port: server.smtpPort, from: 'ann@sender.test', to, raw });
      assert.equal(sent.code, 250, sent.response);
      const check = await api.post(`/api/e2/guard/${rule.body.id}/check`, { emailId: sent.queuedIds[0] });
      return check.body.conditions;
    };
    assert.deepEqual(await headersMatched(5), [{ condition: 'headers', matched: true }]);
    assert.deepEqual(await headersMatched(19), [{ condition: 'headers', matched: false }]);
    await api.delete(`/api/e2/guard/${rule.body.id}`);
  });

  test('a recipient on another account’s domain is 404, accepted or not; a missing recipient is 400', async () => {
    const theirs = (await stranger.get('/api/v2/domains')).body.data[0].id;
    await routeAddress(stranger, 'their@theirs.test', theirs, { endpointId: strangersHook.id });
    const quiet = await routeAddress(stranger, 'quiet@theirs.test', theirs, { endpointId: strangersHook.id });
    assert.equal((await stranger.put(`/api/v2/email-addresses/${quiet.id}`, { isActive: false })).status, 200);
    assert.equal((await stranger.post('/api/v2/domains', { domain: 'pending-theirs.test' })).status, 201);
    // Accepted, inactive, unknown and on a domain not verified yet: SMTP does not tell the middle two apart.
    for (const recipient of ['their@theirs.test', 'quiet@theirs.test', 'nobody@theirs.test', 'x@pending-theirs.test']) {
      const foreign = await api.post('/api/v2/routing/explain', { recipient });
      assert.equal(foreign.status, 404, recipient);
      assert.deepEqual(foreign.body, { error: 'Domain not found' });
    }
    const own = await stranger.post('/api/v2/routing/explain', { recipient: 'quiet@theirs.test' });
    assert.equal(own.body.rejection.reason, 'inactive_address');
    const missing = await api.post('/api/v2/routing/explain', {});
    assert.equal(missing.status, 400);
    assert.deepEqual(missing.body, { error: 'recipient is required' });
  });
});

test('the OpenAPI documents list the guard, blocklist and explain routes with their schemas', async () => {
  const e2 = (await api.get('/api/e2/openapi.json')).body;
  assert.deepEqual(Object.keys(e2.paths['/api/e2/guard']).sort(), ['get', 'post']);
  assert.deepEqual(Object.keys(e2.paths['/api/e2/guard/{id}']).sort(), ['delete', 'get', 'put']);
  assert.deepEqual(Object.keys(e2.paths['/api/e2/guard/{id}/check']), ['post']);
  assert.deepEqual(Object.keys(e2.paths['/api/e2/guard/generate']), ['post']);
  assert.deepEqual(Object.keys(e2.paths['/api/e2/blocklist']).sort(), ['get', 'post']);
  assert.deepEqual(Object.keys(e2.paths['/api/e2/blocklist/unblock']), ['post']);
  const created = e2.paths['/api/e2/guard'].post;
  assert.deepEqual(
    Object.keys(created.requestBody.content['application/json'].schema.properties.conditions.properties),
    ['sender', 'senderDomain', 'recipient', 'subject', 'headers', 'hasAttachment', 'spf', 'dkim', 'dmarc'],
  );
  assert.ok(created.responses['201'].content['application/json'].schema.properties.action);
  const v2 = (await api.get('/api/v2/openapi.json')).body;
  const explain = v2.paths['/api/v2/routing/explain'].post;
  assert.deepEqual(Object.keys(explain.requestBody.content['application/json'].schema.properties), [
    'recipient',
    'from',
    'subject',
    'headers',
  ]);
  assert.ok(explain.responses['200'].content['application/json'].schema.properties.target);
  assert.ok(v2.paths['/api/v2/mail/{id}'].get.responses['200'].content['application/json'].schema.properties.guard);
});
