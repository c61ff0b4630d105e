import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { createWebhookEndpoint, routeAddress } from '../delivery/setup.ts';
import { startTestApp, type TestApp } from '../helpers/app.ts';
import { type DnsServer, startDnsServer } from '../helpers/dns-server.ts';
import { createVerifiedDomain } from '../helpers/domains.ts';
import { type ApiClient, apiClient } from '../helpers/http.ts';
import { sendMail } from '../helpers/smtp.ts';

/** What rules read of a message an outside sender wrote, and how many rules an account may have. */

let dns: DnsServer;
let server: TestApp;
let api: ApiClient;
let domainId: string;
let hook: { id: string };

before(async () => {
  dns = await startDnsServer();
  server = await startTestApp({ DNS_SERVERS: dns.address });
  api = apiClient(server.baseUrl, server.apiKey);
  domainId = (await createVerifiedDomain(api, dns, 'bounds.test')).id;
  hook = await createWebhookEndpoint(api, 'Hook', { url: 'https://hook.example.com/in' });
});
after(async () => {
  await server.close();
  await dns.close();
});

async function createRule(client: ApiClient, rule: Record<string, unknown>): Promise<string> {
  const created = await client.post('/api/e2/guard', rule);
  assert.equal(created.status, 201, JSON.stringify(created.body));
  return created.body.id;
}

test('contains and exact look at the first 16,384 characters of a repeated header, its values together', async () => {
  const to = 'traced@bounds.test';
  await routeAddress(api, to, domainId, { endpointId: hook.id });
  const ids = await Promise.all(
    (['contains', 'exact'] as const).map((operator) =>
      createRule(api, {
        name: `Trace ${operator}`,
        conditions: { headers: [{ name: 'x-trace', value: { operator, value: 'needle' } }] },
        action: { type: 'tag', tag: operator },
      }),
    ),
  );
  // Values of 900 characters: the needle after 5 of them (4,500) is looked at, after 19 (17,100) it is not.
  const checked = async (before: number) => {
    const traces = [...Array.from({ length: before }, () => 'x'.repeat(900)), 'needle'];
    const raw = ['From: ann@sender.test', `To: ${to}`, 'Subject: Traced', ...traces.map((v) => `X-Trace: ${v}`)];
    const sent = await sendMail({
      port: server.smtpPort,
      from: 'ann@sender.test',
      to,
      raw: `${raw.join('\r\n')}\r\n\r\nHi\r\n`,
    });
    assert.equal(sent.code, 250, sent.response);
    const results = [];
    for (const id of ids) {
      const check = await api.post(`/api/e2/guard/${id}/check`, { emailId: sent.queuedIds[0] });
      results.push(check.body.conditions);
    }
    return results;
  };
  const headers = (matched: boolean) => [{ condition: 'headers', matched }];
  assert.deepEqual(await checked(5), [headers(true), headers(true)]);
  assert.deepEqual(await checked(19), [headers(false), headers(false)]);
  for (const id of ids) await api.delete(`/api/e2/guard/${id}`);
});

test("a message's rules share one regex budget: a long pattern over a long subject leaves none to later rules", async () => {
  const to = 'budget@bounds.test';
  await routeAddress(api, to, domainId, { endpointId: hook.id });
  const recipient = { operator: 'exact', value: to };
  // 256 characters times the 16,384 searched: the whole budget.
  const first = await createRule(api, {
    name: 'Long pattern',
    priority: 1,
    conditions: { recipient, subject: { operator: 'regex', value: 'q'.repeat(256) } },
    action: { type: 'tag', tag: 'first' },
  });
  const second = await createRule(api, {
    name: 'Needle',
    priority: 2,
    conditions: { recipient, subject: { operator: 'regex', value: 'needle' } },
    action: { type: 'tag', tag: 'second' },
  });
  const tags = async (subject: string) =>
    (await api.post('/api/v2/routing/explain', { recipient: to, subject })).body.tags;
  assert.deepEqual(await tags(`${'x'.repeat(16_378)}needle`), []);
  assert.deepEqual(await tags(`${'x'.repeat(1_000)}needle`), ['second']);
  await api.delete(`/api/e2/guard/${first}`);
  assert.deepEqual(await tags(`${'x'.repeat(16_378)}needle`), ['second']);
  await api.delete(`/api/e2/guard/${second}`);
});

test('an account has at most 200 rules: the next is 403 until one is deleted', async () => {
  const many = apiClient(server.baseUrl, await server.newAccountKey('many-rules'));
  const rule = (n: number) => ({
    name: `Rule ${n}`,
    conditions: { subject: { operator: 'contains', value: `word${n}` } },
    action: { type: 'tag', tag: `t${n}` },
  });
  const ids: string[] = [];
  for (let n = 1; n <= 200; n++) ids.push(await createRule(many, rule(n)));
  const refused = await many.post('/api/e2/guard', rule(201));
  assert.deepEqual(
    [refused.status, refused.body],
    [403, { error: 'Rule limit reached: an account can have at most 200 rules' }],
  );
  // Another account's count is its own.
  await createRule(api, rule(1)).then((id) => api.delete(`/api/e2/guard/${id}`));
  assert.equal((await many.delete(`/api/e2/guard/${ids[0]}`)).status, 200);
  await createRule(many, rule(201));
});

test('a long blocklist: the entries that name the sender or its domain block, in the order they were added', async () => {
  const to = 'listed@bounds.test';
  await routeAddress(api, to, domainId, { endpointId: hook.id });
  const block = async (emailAddress: string) => {
    const added = await api.post('/api/e2/blocklist', { emailAddress });
    assert.equal(added.status, 201, JSON.stringify(added.body));
    return added.body.id as string;
  };
  const ids = new Map<string, string>();
  for (let n = 1; n <= 300; n++) {
    const emailAddress = n === 150 ? '*@sender.test' : n === 300 ? 'ann@sender.test' : `spam${n}@bulk.test`;
    ids.set(emailAddress, await block(emailAddress));
  }
  const matches = async (from: string) =>
    (await api.post('/api/v2/routing/explain', { recipient: to, from })).body.rules.map(
      (rule: { ruleId: string; applied: boolean }) => [rule.ruleId, rule.applied],
    );
  assert.deepEqual(await matches('Ann@Sender.test'), [
    [ids.get('*@sender.test'), true],
    [ids.get('ann@sender.test'), false],
  ]);
  assert.deepEqual(await matches('bob@sender.test'), [[ids.get('*@sender.test'), true]]);
  assert.deepEqual(await matches('spam299@bulk.test'), [[ids.get('spam299@bulk.test'), true]]);
  assert.deepEqual(await matches('bob@sub.sender.test'), []);
  for (const emailAddress of ids.keys()) await api.post('/api/e2/blocklist/unblock', { emailAddress });
});
