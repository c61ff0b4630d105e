import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { createWebhookEndpoint, routeAddress, waitForDelivery } from '../delivery/setup.ts';
import { createVerifiedDomain } from '../helpers/domains.ts';
import { type ApiClient, apiClient } from '../helpers/http.ts';
import { startWebhookReceiver } from '../helpers/webhook-receiver.ts';
import { type MailWorld, rawMessage, startMailWorld } from '../mail/setup.ts';
import { isErased, isKept, type Sent, sendTracked } from './setup.ts';

/**
 * Erase by query for a data-subject request: three emails from subject@sender.test among others, and one from the
 * same sender to another account, which must stay.
 */
let world: MailWorld;
let outsider: ApiClient;
const subject: Sent[] = [];
let bystander: Sent;
let otherAccountsMail: string;

before(async () => {
  world = await startMailWorld(['inbox@erase.test', 'sales@erase.test']);
  for (const [to, word] of [
    ['inbox@erase.test', 'erasealpha'],
    ['sales@erase.test', 'erasebravo'],
    ['inbox@erase.test', 'erasecharlie'],
  ]) {
    subject.push(await sendTracked(world, to!, word!, 'subject@sender.test'));
  }
  bystander = await sendTracked(world, 'inbox@erase.test', 'erasedelta', 'someone@sender.test');

  outsider = apiClient(world.server.baseUrl, await world.server.newAccountKey('other-erase'));
  const domain = await createVerifiedDomain(outsider, world.dns, 'other-erase.test');
  assert.equal(
    (await outsider.post('/api/v2/email-addresses', { address: 'me@other-erase.test', domainId: domain.id })).status,
    201,
  );
  [otherAccountsMail] = await world.deliver({ from: 'subject@sender.test', to: 'me@other-erase.test', text: 'hi' });
});
after(() => world.close());

const FILTER = { emailAddress: 'subject@sender.test', includeArchived: true };

test('POST /api/v2/mail/erase: a dry run counts the matches and erases nothing', async () => {
  const answer = await world.api.post('/api/v2/mail/erase', { ...FILTER, dryRun: true });
  assert.deepEqual([answer.status, answer.body], [200, { dryRun: true, count: 3 }]);
  for (const sent of subject) assert.ok(await isKept(world, sent));
});

test('POST /api/v2/mail/erase: a search with no letter or digit (`🎉`) matches nothing, not the whole mailbox', async () => {
  const answer = await world.api.post('/api/v2/mail/erase', { search: '🎉', includeArchived: true, dryRun: true });
  assert.deepEqual([answer.status, answer.body], [200, { dryRun: true, count: 0 }]);
});

test('POST /api/v2/mail/erase: 400 for an empty domain, which would match every domain, dry run or not', async () => {
  const total = (await world.api.post('/api/v2/mail/erase', { includeArchived: true, dryRun: true })).body.count;
  for (const body of [
    { domain: '', dryRun: true },
    { domain: '', includeArchived: true, expectedCount: total },
  ]) {
    const answer = await world.api.post('/api/v2/mail/erase', body);
    assert.deepEqual(
      [answer.status, answer.body],
      [400, { error: 'Invalid request: body/domain must NOT have fewer than 1 characters' }],
    );
  }
  for (const sent of [...subject, bystander]) assert.ok(await isKept(world, sent), sent.word);
});

test('POST /api/v2/mail/erase: 400 for a blank search or domain, which would match every email, dry run or not', async () => {
  const total = (await world.api.post('/api/v2/mail/erase', { includeArchived: true, dryRun: true })).body.count;
  for (const [body, error] of [
    [{ search: '', dryRun: true }, 'body/search must NOT have fewer than 1 characters'],
    [{ search: '  ', includeArchived: true, expectedCount: total }, 'body/search must match pattern "\\S"'],
    [{ domain: ' ', includeArchived: true, expectedCount: total }, 'body/domain must match pattern "\\S"'],
  ] as const) {
    const answer = await world.api.post('/api/v2/mail/erase', body);
    assert.deepEqual([answer.status, answer.body], [400, { error: `Invalid request: ${error}` }], JSON.stringify(body));
  }
  for (const sent of [...subject, bystander]) assert.ok(await isKept(world, sent), sent.word);
});

test('POST /api/v2/mail/erase: 400 for a property it does not know, which would otherwise widen the filter', async () => {
  const total = (await world.api.post('/api/v2/mail/erase', { includeArchived: true, dryRun: true })).body.count;
  for (const [body, property] of [
    [{ dryRun: true, junk: 1 }, 'junk'],
    [{ serch: 'erasealpha', dryRun: true }, 'serch'],
    [{ emailadress: 'subject@sender.test', expectedCount: total }, 'emailadress'],
  ] as const) {
    const answer = await world.api.post('/api/v2/mail/erase', body);
    assert.deepEqual(
      [answer.status, answer.body],
      [400, { error: `Invalid request: body/${property} is not a known property` }],
    );
  }
  for (const sent of [...subject, bystander]) assert.ok(await isKept(world, sent), sent.word);
  assert.deepEqual((await world.api.post('/api/v2/mail/erase', { includeArchived: true, dryRun: true })).body, {
    dryRun: true,
    count: total,
  });
  assert.deepEqual((await world.api.get('/api/v2/mail/erasures')).body.erasures, []);
  // Every documented field still goes through (emailAddress and emailId are not taken together).
  const fields = { search: 'erasealpha', status: 'all', domain: 'all', timeRange: '90d', includeArchived: true };
  for (const only of [{ emailAddress: 'subject@sender.test' }, { emailId: subject[0]!.id }]) {
    const answer = await world.api.post('/api/v2/mail/erase', { ...fields, ...only, dryRun: true, expectedCount: 1 });
    assert.deepEqual([answer.status, answer.body], [200, { dryRun: true, count: 1 }]);
  }
});

test('POST /api/v2/mail/erase: 400 without expectedCount, 409 with the count when it does not match', async () => {
  const missing = await world.api.post('/api/v2/mail/erase', FILTER);
  assert.deepEqual(
    [missing.status, missing.body],
    [400, { error: 'expectedCount is required to erase: send the count of a dry run with the same filter' }],
  );
  const stale = await world.api.post('/api/v2/mail/erase', { ...FILTER, expectedCount: 2 });
  assert.deepEqual(
    [stale.status, stale.body],
    [409, { error: 'The filter matches 3 emails, not the expected 2: run the dry run again', count: 3 }],
  );
  for (const sent of subject) assert.ok(await isKept(world, sent));
  assert.deepEqual((await world.api.get('/api/v2/mail/erasures')).body.erasures, []);
});

test('POST /api/v2/mail/erase: erases the matches (rows, search entries, blobs) and records who, what filter, how many', async () => {
  const keys = await world.api.get('/api/v2/keys');
  const keyId = keys.body.data[0].id;
  const answer = await world.api.post('/api/v2/mail/erase', { ...FILTER, expectedCount: 3 });
  assert.equal(answer.status, 200, JSON.stringify(answer.body));
  const { erasure } = answer.body;
  assert.match(erasure.id, /^era_/);
  assert.ok(!Number.isNaN(Date.parse(erasure.erasedAt)));
  assert.deepEqual(answer.body, {
    dryRun: false,
    count: 3,
    erasure: { id: erasure.id, apiKeyId: keyId, filter: FILTER, erasedCount: 3, erasedAt: erasure.erasedAt },
  });
  for (const sent of subject) assert.ok(await isErased(world, sent), sent.word);
  assert.ok(await isKept(world, bystander), 'mail from another sender stays');
  // Nor do the events that told of them (received, delivered) stay to be replayed.
  const events = await world.server.app.database.db.selectFrom('events').select('data').execute();
  assert.deepEqual(
    events.filter((event) => subject.some((sent) => event.data.includes(sent.id))),
    [],
  );
  assert.ok(
    events.some((event) => event.data.includes(bystander.id)),
    'the other sender’s events stay',
  );

  const audit = await world.api.get('/api/v2/mail/erasures');
  assert.deepEqual(audit.body, {
    erasures: [erasure],
    pagination: { limit: 50, offset: 0, total: 1, hasMore: false },
  });
  assert.doesNotMatch(JSON.stringify(audit.body), /erasealpha|erasebravo|erasecharlie/, 'no content in the audit');
});

test("POST /api/v2/mail/erase: another account's mail and audit records are untouched", async () => {
  const theirs = await outsider.get(`/api/v2/mail/${otherAccountsMail}`);
  assert.equal(theirs.status, 200);
  assert.equal(theirs.body.from, 'subject@sender.test');
  assert.deepEqual((await outsider.get('/api/v2/mail/erasures')).body.erasures, []);
  const dryRun = await outsider.post('/api/v2/mail/erase', { ...FILTER, dryRun: true });
  assert.deepEqual(dryRun.body, { dryRun: true, count: 1 });
});

test('POST /api/v2/mail/erase: a thread that keeps emails counts and numbers only those left', async () => {
  const message = (from: string, id: string, inReplyTo?: string) =>
    rawMessage(
      {
        From: from,
        To: 'inbox@erase.test',
        Subject: 'Erased in the middle',
        'Message-ID': `<${id}@sender.test>`,
        ...(inReplyTo ? { 'In-Reply-To': `<${inReplyTo}@sender.test>` } : {}),
      },
      'Hello\n',
    );
  const send = async (from: string, id: string, inReplyTo?: string) =>
    (await world.deliver({ from, to: 'inbox@erase.test', raw: message(from, id, inReplyTo) }))[0]!;
  const root = await send('stays@sender.test', 'er-root');
  await send('leaves@sender.test', 'er-middle', 'er-root');
  const last = await send('stays@sender.test', 'er-last', 'er-middle');
  const erased = await world.api.post('/api/v2/mail/erase', { emailAddress: 'leaves@sender.test', expectedCount: 1 });
  assert.equal(erased.status, 200, JSON.stringify(erased.body));

  const thread = await world.api.get(`/api/v2/mail/${root}/thread`);
  assert.deepEqual(
    thread.body.messages.map((m: { id: string; threadPosition: number }) => [m.id, m.threadPosition]),
    [
      [root, 1],
      [last, 2],
    ],
  );
  const threads = await world.api.get('/api/e2/mail/threads');
  const listed = threads.body.threads.find(
    (t: { root_message_id: string }) => t.root_message_id === '<er-root@sender.test>',
  );
  const lastEmail = await world.api.get(`/api/v2/mail/${last}`);
  assert.deepEqual([listed.message_count, listed.last_message_at], [2, lastEmail.body.receivedAt]);
  const next = await send('stays@sender.test', 'er-next', 'er-last');
  assert.equal((await world.api.get(`/api/v2/mail/${next}`)).body.threadPosition, 3);
});

test('POST /api/v2/mail/erase: mail whose webhook is being sent goes at once; the answer that comes after is dropped', async () => {
  const domains = await world.api.get('/api/v2/domains');
  const domainId = domains.body.data.find((domain: { domain: string }) => domain.domain === 'erase.test').id;
  // One receiver's answer is a success, the other's a failure with no retry left: on PostgreSQL the first is recorded
  // by one statement, the second in a transaction with the health alerts.
  const receivers = [await startWebhookReceiver(), await startWebhookReceiver()];
  let answer!: () => void;
  const answered = new Promise((resolve) => {
    answer = () => resolve(undefined);
  });
  receivers[0]!.answer({ status: 200, after: answered }, { status: 200 });
  receivers[1]!.answer({ status: 500, after: answered }, { status: 200 });
  try {
    const targets = ['hooked@erase.test', 'failing@erase.test'];
    for (const [index, receiver] of receivers.entries()) {
      const endpoint = await createWebhookEndpoint(world.api, `Slow ${index}`, { url: receiver.url, retryAttempts: 0 });
      await routeAddress(world.api, targets[index]!, domainId, { endpointId: endpoint.id });
    }
    const inFlight = await world.deliver({ from: 'inflight@sender.test', to: targets, text: 'Sent while erased' });
    await Promise.all(receivers.map((receiver) => receiver.waitForRequests(1)));
    for (const id of inFlight) {
      const deliveries = await world.api.get(`/api/v2/deliveries?emailId=${id}`);
      assert.deepEqual(
        deliveries.body.data.map((delivery: { status: string }) => delivery.status),
        ['processing'],
      );
    }
    const erased = await world.api.post('/api/v2/mail/erase', {
      emailAddress: 'inflight@sender.test',
      expectedCount: 2,
    });
    assert.equal(erased.status, 200, JSON.stringify(erased.body));
    answer();

    // Mail sent after the answers, to the same endpoints, is delivered and recorded as ever.
    const later = await world.deliver({ from: 'later@sender.test', to: targets, text: 'After the erase' });
    for (const id of later) {
      const delivery = await waitForDelivery(world.api, id);
      assert.deepEqual(
        [delivery.status, delivery.attemptLog.map((attempt) => [attempt.attempt, attempt.statusCode])],
        ['success', [[1, 200]]],
      );
    }
    for (const id of inFlight) {
      assert.equal((await world.api.get(`/api/v2/mail/${id}`)).status, 404);
      assert.deepEqual((await world.api.get(`/api/v2/deliveries?emailId=${id}`)).body.data, []);
    }
    const events = await world.server.app.database.db.selectFrom('events').select('data').execute();
    assert.deepEqual(
      events.filter((event) => inFlight.some((id) => event.data.includes(id))),
      [],
      'no delivery event tells of the erased mail',
    );
    assert.deepEqual((await world.api.get('/api/v2/alerts?status=open')).body.data, [], 'nor does an alert');
    assert.deepEqual(world.server.loggedErrors(), []);
  } finally {
    for (const receiver of receivers) await receiver.close();
  }
});
