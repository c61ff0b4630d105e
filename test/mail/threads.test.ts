import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { type ApiClient, apiClient } from '../helpers/http.ts';
import { type MailWorld, rawMessage, startMailWorld } from './setup.ts';

let world: MailWorld;
let api: ApiClient;
let unrelated: string;
const thread: string[] = [];

const HEADERS: Array<Record<string, string>> = [
  { From: 'Alice <alice@partner.test>', Subject: 'Project kickoff', 'Message-ID': '<t1@partner.test>' },
  {
    From: 'Bob <bob@partner.test>',
    Subject: 'Re: Project kickoff',
    'Message-ID': '<t2@partner.test>',
    'In-Reply-To': '<t1@partner.test>',
    References: '<t1@partner.test>',
  },
  {
    From: 'Alice <alice@partner.test>',
    Subject: 'Re: Re: Project kickoff',
    'Message-ID': '<t3@partner.test>',
    'In-Reply-To': '<t2@partner.test>',
    References: '<t1@partner.test> <t2@partner.test>',
  },
  {
    From: 'Carol <carol@partner.test>',
    Subject: 'Fwd: Project kickoff',
    'Message-ID': '<t4@partner.test>',
    References: '<t1@partner.test> <t2@partner.test> <t3@partner.test>',
  },
];

before(async () => {
  world = await startMailWorld(['team@thread.test']);
  api = world.api;
  [unrelated] = await world.deliver({
    from: 'dave@other.test',
    to: 'team@thread.test',
    raw: rawMessage(
      { From: 'dave@other.test', To: 'team@thread.test', Subject: 'Lunch?', 'Message-ID': '<u1@other.test>' },
      'Pizza at noon\n',
    ),
  });
  for (const [index, headers] of HEADERS.entries()) {
    const from = /<([^>]+)>/.exec(headers.From!)![1]!;
    const [id] = await world.deliver({
      from,
      to: 'team@thread.test',
      raw: rawMessage(
        { ...headers, To: 'team@thread.test', Cc: 'pm@partner.test', Date: `Thu, 05 Mar 2026 1${index}:00:00 +0000` },
        `Message number ${index + 1}\n`,
      ),
    });
    thread.push(id!);
  }
});
after(() => world.close());

describe('an original, two replies and a forward form one thread', () => {
  test('GET /api/v2/mail?emailId= returns every email of the thread, newest first, archived ones too', async () => {
    await api.patch(`/api/v2/mail/${thread[1]}`, { isArchived: true });
    for (const member of thread) {
      const response = await api.get(`/api/v2/mail?emailId=${member}`);
      assert.deepEqual(
        response.body.emails.map((email: { id: string }) => email.id),
        [...thread].reverse(),
      );
      assert.equal(response.body.pagination.total, 4);
    }
    const alone = await api.get(`/api/v2/mail?emailId=${unrelated}`);
    assert.deepEqual(
      alone.body.emails.map((email: { id: string }) => email.id),
      [unrelated],
    );
    const unknown = await api.get('/api/v2/mail?emailId=email_unknown');
    assert.deepEqual(unknown.body.emails, []);
    await api.patch(`/api/v2/mail/${thread[1]}`, { isArchived: false });
  });

  test('GET /api/v2/mail/{id}/thread returns the messages in thread order with totalCount and threadId', async () => {
    const detail = await api.get(`/api/v2/mail/${thread[2]}`);
    for (const member of thread) {
      const response = await api.get(`/api/v2/mail/${member}/thread`);
      assert.equal(response.status, 200);
      assert.equal(response.body.totalCount, 4);
      assert.equal(response.body.threadId, detail.body.threadId);
      assert.deepEqual(
        response.body.messages.map((message: { id: string }) => message.id),
        thread,
      );
      assert.deepEqual(
        response.body.messages.map((message: { threadPosition: number }) => message.threadPosition),
        [1, 2, 3, 4],
      );
    }
    const [first, , , forward] = (await api.get(`/api/v2/mail/${thread[0]}/thread`)).body.messages;
    assert.equal(first.subject, 'Project kickoff');
    assert.equal(first.textBody, 'Message number 1\n');
    assert.equal(forward.subject, 'Fwd: Project kickoff');
    assert.deepEqual(forward.references, ['<t1@partner.test>', '<t2@partner.test>', '<t3@partner.test>']);
    const unrelatedThread = await api.get(`/api/v2/mail/${unrelated}/thread`);
    assert.equal(unrelatedThread.body.totalCount, 1);
  });

  test('GET /api/v2/mail/{id}/thread: 404 `Email not found` for another account', async () => {
    const other = apiClient(world.server.baseUrl, await world.server.newAccountKey('other-thread'));
    const response = await other.get(`/api/v2/mail/${thread[0]}/thread`);
    assert.equal(response.status, 404);
    assert.deepEqual(response.body, { error: 'Email not found' });
  });
});

describe('e2 /mail/threads', () => {
  test('lists threads by latest activity with participants, latest message and unread counts', async () => {
    await api.get(`/api/v2/mail/${thread[0]}`);
    const response = await api.get('/api/e2/mail/threads');
    assert.equal(response.status, 200);
    assert.equal(response.body.threads.length, 2);
    const [conversation, lunch] = response.body.threads;
    assert.equal(conversation.root_message_id, '<t1@partner.test>');
    assert.equal(conversation.normalized_subject, 'project kickoff');
    assert.equal(conversation.message_count, 4);
    assert.deepEqual(conversation.participant_emails, [
      'alice@partner.test',
      'team@thread.test',
      'pm@partner.test',
      'bob@partner.test',
      'carol@partner.test',
    ]);
    assert.equal(conversation.participant_names[0], 'Alice <alice@partner.test>');
    assert.equal(conversation.latest_message.id, thread[3]);
    assert.equal(conversation.latest_message.type, 'inbound');
    assert.equal(conversation.latest_message.from_text, '"Carol" <carol@partner.test>');
    assert.equal(conversation.latest_message.text_preview, 'Message number 4');
    assert.equal(conversation.has_unread, true);
    assert.equal(conversation.unread_count, 2);
    assert.equal(conversation.is_archived, false);
    assert.equal(lunch.root_message_id, '<u1@other.test>');
    assert.deepEqual(response.body.pagination, { limit: 25, has_more: false, next_cursor: null });
  });

  test('cursor pagination walks the threads one page at a time', async () => {
    const first = await api.get('/api/e2/mail/threads?limit=1');
    assert.equal(first.body.threads.length, 1);
    assert.equal(first.body.pagination.has_more, true);
    const second = await api.get(`/api/e2/mail/threads?limit=1&cursor=${first.body.pagination.next_cursor}`);
    assert.equal(second.body.threads[0].root_message_id, '<u1@other.test>');
    assert.deepEqual(second.body.pagination, { limit: 1, has_more: false, next_cursor: null });
    // A thread id, which the official client's documentation calls the cursor, starts the page after that thread.
    const afterThread = await api.get(`/api/e2/mail/threads?limit=1&cursor=${first.body.threads[0].id}`);
    assert.deepEqual(afterThread.body, second.body);
    const malformed = [
      'thr_unknown',
      'not json',
      ['not a time', 'thr_x'],
      ['2026-03-05T10:00:00.000Z\u0000', 'thr_x'],
      ['2026-03-05T10:00:00.000Z', 'no thread id'],
    ].map((value) => (typeof value === 'string' ? value : Buffer.from(JSON.stringify(value)).toString('base64url')));
    for (const cursor of malformed) {
      const invalid = await api.get(`/api/e2/mail/threads?limit=1&cursor=${encodeURIComponent(cursor)}`);
      assert.equal(invalid.status, 400, cursor);
      assert.deepEqual(invalid.body, { error: 'Invalid cursor' }, cursor);
    }
    assert.deepEqual((await api.get('/api/e2/mail/threads?limit=0')).body, {
      error: 'Limit must be between 1 and 100',
    });
  });

  test('search, unread and address filters', async () => {
    const search = await api.get('/api/e2/mail/threads?search=lunch');
    assert.deepEqual(
      search.body.threads.map((item: { root_message_id: string }) => item.root_message_id),
      ['<u1@other.test>'],
    );
    assert.deepEqual(search.body.filters, { search: 'lunch' });
    const nothingToSearch = await api.get(`/api/e2/mail/threads?search=${encodeURIComponent('🎉')}`);
    assert.deepEqual(nothingToSearch.body.threads, []);
    const byAddress = await api.get('/api/e2/mail/threads?address=carol@partner.test');
    assert.equal(byAddress.body.threads.length, 1);
    assert.equal(byAddress.body.threads[0].message_count, 4);
    await api.get(`/api/v2/mail/${unrelated}`);
    const unread = await api.get('/api/e2/mail/threads?unread=true');
    assert.deepEqual(
      unread.body.threads.map((item: { root_message_id: string }) => item.root_message_id),
      ['<t1@partner.test>'],
    );
  });

  test('GET /api/e2/mail/threads/{id} returns the thread and its messages in thread order', async () => {
    const list = await api.get('/api/e2/mail/threads?limit=1');
    const id = list.body.threads[0].id;
    const response = await api.get(`/api/e2/mail/threads/${id}`);
    assert.equal(response.status, 200);
    assert.equal(response.body.total_count, 4);
    assert.equal(response.body.thread.id, id);
    assert.equal(response.body.thread.message_count, 4);
    assert.deepEqual(
      response.body.messages.map((message: { id: string }) => message.id),
      thread,
    );
    const [first] = response.body.messages;
    assert.equal(first.type, 'inbound');
    assert.equal(first.thread_position, 1);
    assert.equal(first.from_address, 'alice@partner.test');
    assert.equal(first.from_name, 'Alice');
    assert.deepEqual(first.to, ['team@thread.test']);
    assert.deepEqual(first.cc, ['pm@partner.test']);
    assert.equal(first.text_body, 'Message number 1\n');
    assert.equal(first.date, '2026-03-05T10:00:00.000Z');
    assert.equal(first.is_read, true);
  });

  test('GET /api/e2/mail/threads/{id}: 400 for an invalid id, 404 `Thread not found` for unknown or foreign', async () => {
    const invalid = await api.get('/api/e2/mail/threads/bad%20id');
    assert.equal(invalid.status, 400);
    assert.deepEqual(invalid.body, { error: 'Valid thread ID is required' });
    assert.deepEqual((await api.get('/api/e2/mail/threads/thr_unknown')).body, { error: 'Thread not found' });
    const list = await api.get('/api/e2/mail/threads?limit=1');
    const other = apiClient(world.server.baseUrl, await world.server.newAccountKey('other-threads'));
    const foreign = await other.get(`/api/e2/mail/threads/${list.body.threads[0].id}`);
    assert.equal(foreign.status, 404);
  });

  test('cursor pagination carries on where a page ended when its last thread gets a reply meanwhile', async () => {
    const roots = (body: { threads: Array<{ root_message_id: string }> }) =>
      body.threads.map((item) => item.root_message_id);
    for (const name of ['alpha', 'bravo', 'charlie']) {
      await world.deliver({
        from: `${name}@cursor.test`,
        to: 'team@thread.test',
        raw: rawMessage(
          { From: `${name}@cursor.test`, To: 'team@thread.test', Subject: name, 'Message-ID': `<${name}@cursor.test>` },
          `${name}\n`,
        ),
      });
    }
    const first = await api.get('/api/e2/mail/threads?limit=2');
    assert.deepEqual(roots(first.body), ['<charlie@cursor.test>', '<bravo@cursor.test>']);
    await world.deliver({
      from: 'bravo@cursor.test',
      to: 'team@thread.test',
      raw: rawMessage(
        {
          From: 'bravo@cursor.test',
          To: 'team@thread.test',
          Subject: 'Re: bravo',
          'Message-ID': '<bravo-reply@cursor.test>',
          'In-Reply-To': '<bravo@cursor.test>',
        },
        'reply\n',
      ),
    });
    const second = await api.get(`/api/e2/mail/threads?limit=2&cursor=${first.body.pagination.next_cursor}`);
    assert.equal(second.status, 200, JSON.stringify(second.body));
    assert.deepEqual(roots(second.body), ['<alpha@cursor.test>', '<t1@partner.test>']);
    assert.equal(second.body.pagination.has_more, true);
  });

  test('cursor pagination carries on after the last thread of a page when that thread is erased meanwhile', async () => {
    const roots = (body: { threads: Array<{ root_message_id: string }> }) =>
      body.threads.map((item) => item.root_message_id);
    const upToAlpha = await api.get('/api/e2/mail/threads?limit=3');
    assert.deepEqual(roots(upToAlpha.body), ['<bravo@cursor.test>', '<charlie@cursor.test>', '<alpha@cursor.test>']);
    const filter = { emailAddress: 'alpha@cursor.test' };
    assert.equal((await api.post('/api/v2/mail/erase', { ...filter, expectedCount: 1 })).status, 200);
    const rest = await api.get(`/api/e2/mail/threads?limit=3&cursor=${upToAlpha.body.pagination.next_cursor}`);
    assert.equal(rest.status, 200, JSON.stringify(rest.body));
    assert.deepEqual(roots(rest.body), ['<t1@partner.test>', '<u1@other.test>']);
    assert.deepEqual(rest.body.pagination, { limit: 3, has_more: false, next_cursor: null });
  });
});
