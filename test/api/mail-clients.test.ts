import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { Inbound as InboundSdk } from '@inboundemail/sdk';
import Inbound from 'inboundemail';
import { type MailWorld, rawMessage, startMailWorld } from '../mail/setup.ts';

/** The SDK declares this type without exporting it. */
type GetMailRequest = NonNullable<Parameters<InboundSdk['email']['received']['list']>[0]>;

let world: MailWorld;
let originalId: string;
let replyId: string;

const ORIGINAL = rawMessage(
  {
    From: '"Alice Client" <alice@client.test>',
    To: 'desk@clients.test',
    Subject: 'Client question',
    'Message-ID': '<q1@client.test>',
    Date: 'Fri, 06 Mar 2026 12:00:00 +0000',
    'Content-Type': 'multipart/mixed; boundary="c"',
  },
  [
    '--c',
    'Content-Type: multipart/alternative; boundary="a"',
    '',
    '--a',
    'Content-Type: text/plain; charset=utf-8',
    '',
    'Can you help?',
    '--a',
    'Content-Type: text/html; charset=utf-8',
    '',
    '<p>Can you <b>help</b>?</p>',
    '--a--',
    '--c',
    'Content-Type: text/csv; name="data.csv"',
    'Content-Disposition: attachment; filename="data.csv"',
    '',
    'a,b',
    '1,2',
    '--c--',
    '',
  ].join('\n'),
);

before(async () => {
  world = await startMailWorld(['desk@clients.test']);
  [originalId] = await world.deliver({ from: 'alice@client.test', to: 'desk@clients.test', raw: ORIGINAL });
  [replyId] = await world.deliver({
    from: 'alice@client.test',
    to: 'desk@clients.test',
    raw: rawMessage(
      {
        From: 'alice@client.test',
        To: 'desk@clients.test',
        Subject: 'Re: Client question',
        'Message-ID': '<q2@client.test>',
        'In-Reply-To': '<q1@client.test>',
        References: '<q1@client.test>',
      },
      'Any news?\n',
    ),
  });
});
after(() => world.close());

describe('@inboundemail/sdk (v2): mail', () => {
  const sdk = () => new InboundSdk(world.server.apiKey, `${world.server.baseUrl}/api/v2`);

  test('mail.list and mail.get return typed fields matching the stored email', async () => {
    const list = await sdk().mail.list({ limit: 10, search: 'client', emailAddress: 'alice@client.test' });
    assert.equal(list.error, undefined);
    assert.deepEqual(
      list.data!.emails.map((email) => email.id),
      [replyId, originalId],
    );
    const item = list.data!.emails[1]!;
    assert.equal(item.subject, 'Client question');
    assert.equal(item.from, 'alice@client.test');
    assert.equal(item.fromName, 'Alice Client');
    assert.equal(item.recipient, 'desk@clients.test');
    assert.equal(item.preview, 'Can you help?');
    assert.equal(item.hasAttachments, true);
    assert.equal(item.attachmentCount, 1);
    assert.equal(list.data!.pagination.total, 2);

    const got = await sdk().mail.get(originalId);
    assert.equal(got.error, undefined);
    const email = got.data!;
    assert.equal(email.id, originalId);
    assert.equal(email.emailId, originalId);
    assert.equal(email.subject, 'Client question');
    assert.equal(email.from, 'alice@client.test');
    assert.equal(email.to, 'desk@clients.test');
    assert.equal(email.textBody, 'Can you help?');
    assert.equal(email.htmlBody, '<p>Can you <b>help</b>?</p>');
    assert.deepEqual(email.attachments, [{ filename: 'data.csv', contentType: 'text/csv', size: 8, contentId: '' }]);
    assert.equal(email.receivedAt, item.receivedAt);
  });

  test('an empty email id is answered with the spec\'s "Valid email ID is required"', async () => {
    const received = sdk().email.received;
    for (const call of [received.get, received.thread, received.markRead, received.archive]) {
      assert.deepEqual(await call(''), { error: 'Valid email ID is required' }, call.name);
    }
  });

  test('email.received.list reads empty parameters as not given (an unset filter sent as ""), as Inbound does', async () => {
    const all = await sdk().email.received.list();
    assert.deepEqual(
      all.data!.emails.map((email) => email.id),
      [replyId, originalId],
    );
    const unset = { search: '', domain: '', emailAddress: '', emailId: '' };
    // Typed as unions, but a caller passing a form's unset value sends these empty too.
    const untyped = { status: '', timeRange: '', includeArchived: '' } as unknown as GetMailRequest;
    assert.deepEqual(await sdk().email.received.list({ ...unset, ...untyped }), all);
    const byAddress = await sdk().email.received.list({ emailAddress: 'alice@client.test', emailId: '' });
    assert.deepEqual(byAddress, all);
    // Erase by query keeps an empty filter as given: it matches nothing rather than the whole mailbox.
    const erase = await world.api.post('/api/v2/mail/erase', { emailAddress: '', dryRun: true });
    assert.deepEqual(erase.body, { dryRun: true, count: 0 });
  });

  test('mail.thread returns both messages in order; mail.bulk marks them; mail.reply answers the placeholder', async () => {
    const thread = await sdk().mail.thread(replyId);
    assert.equal(thread.error, undefined);
    assert.equal(thread.data.totalCount, 2);
    assert.deepEqual(
      thread.data.messages.map((message: { id: string }) => message.id),
      [originalId, replyId],
    );
    // Inbound's members of a thread's message, beside Mailroom's flat ones.
    const [first, second] = thread.data.messages;
    // A thread's message gives `from` as the header's text, as Inbound's does (its list and read give the address).
    assert.deepEqual(
      thread.data.messages.map((message: { from: string; fromName: string | null }) => [
        message.from,
        message.fromName,
      ]),
      [
        ['"Alice Client" <alice@client.test>', 'Alice Client'],
        ['alice@client.test', null],
      ],
    );
    assert.deepEqual(first.content, {
      textBody: 'Can you help?',
      htmlBody: '<p>Can you <b>help</b>?</p>',
      attachments: [{ filename: 'data.csv', contentType: 'text/csv', size: 8, contentId: '' }],
    });
    assert.deepEqual(first.addresses, {
      from: {
        text: '"Alice Client" <alice@client.test>',
        addresses: [{ address: 'alice@client.test', name: 'Alice Client' }],
      },
      to: { text: 'desk@clients.test', addresses: [{ address: 'desk@clients.test', name: null }] },
    });
    assert.deepEqual(second.metadata, {
      inReplyTo: '<q1@client.test>',
      references: ['<q1@client.test>'],
      parseSuccess: true,
      parseError: null,
    });
    assert.equal(second.sentAt, null);

    const bulk = await sdk().mail.bulk([originalId, replyId], { isArchived: true });
    assert.equal(bulk.error, undefined);
    assert.deepEqual(bulk.data, {
      updatedCount: 2,
      emails: [
        { id: originalId, isRead: true, isArchived: true },
        { id: replyId, isRead: false, isArchived: true },
      ],
    });
    assert.equal((await sdk().mail.list()).data!.emails.length, 0);
    await sdk().mail.bulk([originalId, replyId], { isArchived: false });

    const reply = await sdk().mail.reply({
      emailId: originalId,
      to: 'alice@client.test',
      subject: 'Re: Client question',
      textBody: 'Yes',
    });
    assert.equal(reply.error, undefined);
    assert.equal(reply.data!.message, 'Reply validated. Sending replies is not implemented yet; nothing was sent.');
    const invalid = await sdk().mail.reply({ emailId: originalId, to: 'nope', subject: 'x', textBody: 'y' });
    assert.equal(invalid.error, 'Invalid email format for to field');
  });
});

describe('inboundemail (e2): emails, mail threads and attachments', () => {
  const client = () => new Inbound({ apiKey: world.server.apiKey, baseURL: world.server.baseUrl, maxRetries: 0 });

  test('emails.list and emails.retrieve return typed fields matching the stored email', async () => {
    const list = await client().emails.list({ type: 'received', search: 'from:alice', limit: '10' });
    assert.deepEqual(
      list.data.map((email) => email.id),
      [replyId, originalId],
    );
    const item = list.data[1]!;
    assert.equal(item.type, 'received');
    // `from` is the address, as Inbound gives it; the name is `from_name` (only a thread's messages format both).
    assert.deepEqual([item.from, item.from_name], ['alice@client.test', 'Alice Client']);
    assert.deepEqual(item.to, ['desk@clients.test']);
    assert.equal(item.subject, 'Client question');
    assert.equal(item.has_attachments, true);
    assert.equal(item.attachment_count, 1);
    assert.equal(item.status, 'delivered');
    assert.equal(list.pagination.total, 2);
    assert.equal(list.pagination.has_more, false);

    const email = await client().emails.retrieve(originalId);
    assert.equal(email.object, 'email');
    assert.equal(email.id, originalId);
    assert.equal(email.from, 'alice@client.test');
    assert.equal(email.text, 'Can you help?');
    assert.equal(email.html, '<p>Can you <b>help</b>?</p>');
    assert.equal(email.has_attachments, true);
    assert.equal(email.thread_position, 1);
  });

  test('emails.list and mail.list take the address filter as an address id as well as an address', async () => {
    const [desk] = (await world.api.get('/api/v2/email-addresses')).body.data;
    for (const address of [desk.id, 'desk@clients.test']) {
      const emails = await client().emails.list({ address });
      assert.deepEqual(
        emails.data.map((email) => email.id),
        [replyId, originalId],
        address,
      );
      const threads = await client().mail.list({ address });
      assert.equal(threads.threads.length, 1, address);
    }
    assert.deepEqual((await client().emails.list({ address: 'addr_unknown' })).data, []);
  });

  test('emails.list and mail.list read empty parameters as not given (an unset filter sent as ""), as Inbound does', async () => {
    const emails = await client().emails.list();
    assert.deepEqual(
      emails.data.map((email) => email.id),
      [replyId, originalId],
    );
    const empty = { address: '', domain: '', search: '', limit: '' };
    assert.deepEqual(await client().emails.list({ ...empty, offset: '' }), emails);
    const threads = await client().mail.list();
    assert.equal(threads.threads.length, 1);
    assert.deepEqual(await client().mail.list({ ...empty, cursor: '', unread: '' }), threads);
  });

  test('emails.list lists archived mail, flagged, except for status unread; status archived lists it alone', async () => {
    await world.api.patch(`/api/e2/emails/${originalId}`, { is_read: true, is_archived: false });
    await world.api.patch(`/api/e2/emails/${replyId}`, { is_read: false, is_archived: true });
    const listed = async (status?: 'unread' | 'read' | 'delivered' | 'archived') =>
      (await client().emails.list(status ? { status } : {})).data.map((email) => [email.id, email.is_archived]);
    assert.deepEqual(await listed(), [
      [replyId, true],
      [originalId, false],
    ]);
    assert.deepEqual(await listed('delivered'), await listed());
    assert.deepEqual(await listed('unread'), []);
    assert.deepEqual(await listed('read'), [[originalId, false]]);
    assert.deepEqual(await listed('archived'), [[replyId, true]]);
    await world.api.patch(`/api/e2/emails/${replyId}`, { is_archived: false });
  });

  test('mail.list and mail.retrieve return the thread with both messages', async () => {
    const threads = await client().mail.list({ limit: '10' });
    assert.equal(threads.threads.length, 1);
    const [thread] = threads.threads;
    assert.equal(thread!.message_count, 2);
    assert.equal(thread!.root_message_id, '<q1@client.test>');
    assert.equal(thread!.latest_message?.id, replyId);
    assert.equal(threads.pagination.has_more, false);

    // Only `true` asks for unread threads; the client types `unread` as any string, as Inbound reads it.
    await world.api.patch(`/api/e2/emails/${originalId}`, { is_read: true });
    await world.api.patch(`/api/e2/emails/${replyId}`, { is_read: true });
    for (const [unread, count] of [
      ['true', 0],
      ['false', 1],
      ['1', 1],
    ] as const) {
      assert.equal((await client().mail.list({ unread })).threads.length, count, `unread=${unread}`);
    }
    await world.api.patch(`/api/e2/emails/${replyId}`, { is_read: false });

    const detail = await client().mail.retrieve(thread!.id);
    assert.equal(detail.total_count, 2);
    assert.deepEqual(
      detail.messages.map((message) => [message.id, message.thread_position, message.type]),
      [
        [originalId, 1, 'inbound'],
        [replyId, 2, 'inbound'],
      ],
    );
    assert.deepEqual(
      [detail.messages[0]!.from, detail.messages[0]!.from_address],
      ['"Alice Client" <alice@client.test>', 'alice@client.test'],
    );
    assert.deepEqual(detail.messages[0]!.attachments, [
      { filename: 'data.csv', contentType: 'text/csv', size: 8, contentId: '' },
    ]);
  });

  test('attachments.retrieve downloads the file with its headers', async () => {
    const response = await client().attachments.retrieve('data.csv', { id: originalId }).asResponse();
    assert.equal(response.status, 200);
    assert.equal(response.headers.get('content-type'), 'text/csv');
    assert.equal(
      response.headers.get('content-disposition'),
      `attachment; filename="data.csv"; filename*=UTF-8''data.csv`,
    );
    assert.equal(await response.text(), 'a,b\r\n1,2');
  });
});
