import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { startTestApp, type TestApp } from '../helpers/app.ts';
import { type DnsServer, startDnsServer } from '../helpers/dns-server.ts';
import { createVerifiedDomain } from '../helpers/domains.ts';
import { type ApiClient, apiClient } from '../helpers/http.ts';
import { sendMail } from '../helpers/smtp.ts';
import { createAddress, createEndpoint } from '../smtp/mail-setup.ts';

let dns: DnsServer;
let server: TestApp;
let api: ApiClient;
let webhookEndpoint: string;
let forwardEndpoint: string;
let groupEndpoint: string;
let inactiveEndpoint: string;
const committed: string[][] = [];

before(async () => {
  dns = await startDnsServer();
  server = await startTestApp({ DNS_SERVERS: dns.address });
  api = apiClient(server.baseUrl, server.apiKey);
  const { id: domainId } = await createVerifiedDomain(api, dns, 'pipeline.test');
  webhookEndpoint = await createEndpoint(api, 'webhook');
  forwardEndpoint = await createEndpoint(api, 'email');
  groupEndpoint = await createEndpoint(api, 'email_group');
  inactiveEndpoint = await createEndpoint(api, 'webhook', { isActive: false });
  await createAddress(api, 'hook@pipeline.test', domainId, { endpointId: webhookEndpoint });
  await createAddress(api, 'forward@pipeline.test', domainId, { endpointId: forwardEndpoint });
  await createAddress(api, 'group@pipeline.test', domainId, { endpointId: groupEndpoint });
  await createAddress(api, 'off@pipeline.test', domainId, { endpointId: inactiveEndpoint });
  await createAddress(api, 'store@pipeline.test', domainId);
  server.app.ingest.onCommitted((emails) => committed.push(emails.map((email) => email.id)));
});
after(async () => {
  await server.close();
  await dns.close();
});

const db = () => server.app.database.db;

function message(messageId: string, extra = '') {
  return Buffer.from(
    `From: a@sender.test\r\nTo: hook@pipeline.test\r\nSubject: Hello\r\nMessage-ID: ${messageId}\r\n${extra}\r\nBody of ${messageId}\r\n`,
  );
}

describe('ingest transaction', () => {
  // The delivery worker in the same app starts on these jobs at once, so only the columns ingest owns are compared;
  // status, attempts and next_attempt_at belong to the worker from the commit on.
  test('one email row per accepted recipient and one delivery job per routed, active endpoint', async () => {
    const sent = await sendMail({
      port: server.smtpPort,
      to: [
        'hook@pipeline.test',
        'forward@pipeline.test',
        'group@pipeline.test',
        'off@pipeline.test',
        'store@pipeline.test',
      ],
      raw: message('<routes-1@sender.test>'),
    });
    assert.equal(sent.ok, true, sent.response);
    assert.equal(sent.queuedIds.length, 5);
    const emails = await db()
      .selectFrom('emails')
      .select(['id', 'recipient', 'thread_id', 'thread_position'])
      .where('message_id', '=', '<routes-1@sender.test>')
      .orderBy('recipient')
      .execute();
    assert.deepEqual(
      emails.map((email) => email.recipient),
      [
        'forward@pipeline.test',
        'group@pipeline.test',
        'hook@pipeline.test',
        'off@pipeline.test',
        'store@pipeline.test',
      ],
    );
    const jobs = await db()
      .selectFrom('deliveries')
      .innerJoin('emails', 'emails.id', 'deliveries.email_id')
      .select([
        'emails.recipient',
        'deliveries.target_type',
        'deliveries.target_id',
        'deliveries.delivery_type',
        'deliveries.created_at',
        'emails.created_at as email_created_at',
      ])
      .where('emails.message_id', '=', '<routes-1@sender.test>')
      .orderBy('emails.recipient')
      .execute();
    assert.deepEqual(
      jobs.map(({ created_at, email_created_at, ...job }) => {
        assert.equal(created_at, email_created_at);
        return { ...job };
      }),
      [
        {
          recipient: 'forward@pipeline.test',
          target_type: 'endpoint',
          target_id: forwardEndpoint,
          delivery_type: 'email_forward',
        },
        {
          recipient: 'group@pipeline.test',
          target_type: 'endpoint',
          target_id: groupEndpoint,
          delivery_type: 'email_forward',
        },
        {
          recipient: 'hook@pipeline.test',
          target_type: 'endpoint',
          target_id: webhookEndpoint,
          delivery_type: 'webhook',
        },
      ],
    );
    // The copies one account received of one message share a thread.
    assert.equal(new Set(emails.map((email) => email.thread_id)).size, 1);
    assert.deepEqual(committed.at(-1)?.sort(), [...sent.queuedIds].sort());
  });

  test('a retried copy (same Message-ID, recipient and bytes) is stored once and still answered 250 with the first id', async () => {
    const raw = message('<retry-1@sender.test>');
    const first = await sendMail({ port: server.smtpPort, to: 'hook@pipeline.test', raw });
    const committedBefore = committed.length;
    const second = await sendMail({ port: server.smtpPort, to: 'hook@pipeline.test', raw });
    assert.equal(second.ok, true, second.response);
    assert.deepEqual(second.queuedIds, first.queuedIds);
    const rows = await db()
      .selectFrom('emails')
      .select('id')
      .where('message_id', '=', '<retry-1@sender.test>')
      .execute();
    assert.equal(rows.length, 1);
    const jobs = await db().selectFrom('deliveries').select('id').where('email_id', '=', rows[0]!.id).execute();
    assert.equal(jobs.length, 1);
    assert.equal(committed.length, committedBefore, 'a duplicate wakes nobody');
    const blobs = await db().selectFrom('emails').select('raw_blob_key').where('id', '=', rows[0]!.id).execute();
    assert.equal(blobs.length, 1);
  });

  test('the same Message-ID with different bytes is a different message and is stored again', async () => {
    await sendMail({ port: server.smtpPort, to: 'store@pipeline.test', raw: message('<edit-1@sender.test>') });
    await sendMail({
      port: server.smtpPort,
      to: 'store@pipeline.test',
      raw: message('<edit-1@sender.test>', 'X-Edited: yes\r\n'),
    });
    const rows = await db()
      .selectFrom('emails')
      .select('id')
      .where('message_id', '=', '<edit-1@sender.test>')
      .execute();
    assert.equal(rows.length, 2);
  });

  test('without a Message-ID, a retried copy is still stored once, and a message with other bytes is stored', async () => {
    const raw = (body: string) =>
      Buffer.from(`From: a@sender.test\r\nTo: store@pipeline.test\r\nSubject: No id\r\n\r\n${body}\r\n`);
    const first = await sendMail({ port: server.smtpPort, to: 'store@pipeline.test', raw: raw('no-id retry') });
    const second = await sendMail({ port: server.smtpPort, to: 'store@pipeline.test', raw: raw('no-id retry') });
    const other = await sendMail({ port: server.smtpPort, to: 'store@pipeline.test', raw: raw('no-id other') });
    assert.equal(second.ok, true, second.response);
    assert.deepEqual(second.queuedIds, first.queuedIds);
    assert.notDeepEqual(other.queuedIds, first.queuedIds);
    const rows = await db()
      .selectFrom('emails')
      .select('id')
      .where('subject', '=', 'No id')
      .orderBy('received_at')
      .execute();
    assert.deepEqual(
      rows.map((row) => row.id),
      [...first.queuedIds, ...other.queuedIds],
    );
  });

  test('copies retried after their domain moved to another account are stored for that account', async () => {
    const withId = message('<moved-1@sender.test>');
    const withoutId = Buffer.from('From: a@sender.test\r\nTo: hook@moving.test\r\nSubject: Moved\r\n\r\nNo id\r\n');
    const domain = await createVerifiedDomain(api, dns, 'moving.test');
    await createAddress(api, 'hook@moving.test', domain.id);
    const before = [];
    for (const raw of [withId, withoutId])
      before.push(await sendMail({ port: server.smtpPort, to: 'hook@moving.test', raw }));
    assert.equal((await api.delete(`/api/v2/domains/${domain.id}`)).status, 200);

    const other = apiClient(server.baseUrl, await server.newAccountKey('new-owner'));
    const moved = await createVerifiedDomain(other, dns, 'moving.test');
    await createAddress(other, 'hook@moving.test', moved.id);
    for (const [i, raw] of [withId, withoutId].entries()) {
      const after = await sendMail({ port: server.smtpPort, to: 'hook@moving.test', raw });
      assert.equal(after.ok, true, after.response);
      assert.notDeepEqual(after.queuedIds, before[i]!.queuedIds);
      const stored = await other.get(`/api/v2/mail/${after.queuedIds[0]}`);
      assert.equal(stored.status, 200, JSON.stringify(stored.body));
      assert.equal(stored.body.subject, i === 0 ? 'Hello' : 'Moved');
      assert.equal((await other.get(`/api/v2/mail/${before[i]!.queuedIds[0]}`)).status, 404);
    }
  });

  test('replies join the thread of the message they name in In-Reply-To or References, in order', async () => {
    await sendMail({ port: server.smtpPort, to: 'store@pipeline.test', raw: message('<root@sender.test>') });
    await sendMail({
      port: server.smtpPort,
      to: 'store@pipeline.test',
      raw: message('<reply-1@sender.test>', 'In-Reply-To: <root@sender.test>\r\nReferences: <root@sender.test>\r\n'),
    });
    await sendMail({
      port: server.smtpPort,
      to: 'store@pipeline.test',
      raw: message('<reply-2@sender.test>', 'References: <root@sender.test> <reply-1@sender.test>\r\n'),
    });
    await sendMail({ port: server.smtpPort, to: 'store@pipeline.test', raw: message('<unrelated@sender.test>') });
    const rows = await db()
      .selectFrom('emails')
      .select(['message_id', 'thread_id', 'thread_position', 'in_reply_to', 'references_json'])
      .where('message_id', 'in', [
        '<root@sender.test>',
        '<reply-1@sender.test>',
        '<reply-2@sender.test>',
        '<unrelated@sender.test>',
      ])
      .orderBy('received_at')
      .execute();
    const [root, reply1, reply2, unrelated] = rows;
    assert.equal(reply1!.thread_id, root!.thread_id);
    assert.equal(reply2!.thread_id, root!.thread_id);
    assert.notEqual(unrelated!.thread_id, root!.thread_id);
    assert.deepEqual(
      rows.map((row) => row.thread_position),
      [1, 2, 3, 1],
    );
    assert.equal(reply1!.in_reply_to, '<root@sender.test>');
    assert.deepEqual(JSON.parse(reply2!.references_json!), ['<root@sender.test>', '<reply-1@sender.test>']);
    const thread = await db()
      .selectFrom('threads')
      .select(['root_message_id', 'normalized_subject', 'message_count'])
      .where('id', '=', root!.thread_id!)
      .executeTakeFirstOrThrow();
    assert.deepEqual(
      { ...thread },
      { root_message_id: '<root@sender.test>', normalized_subject: 'hello', message_count: 3 },
    );
  });
});
