import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import pg from 'pg';
import { openFsBlobStore } from '../../src/blobs/index.ts';
import { startSecondInstance, TEST_DATABASE_URL, type TestApp } from '../helpers/app.ts';
import { createVerifiedDomain } from '../helpers/domains.ts';
import { apiClient } from '../helpers/http.ts';
import { sendMail } from '../helpers/smtp.ts';
import { type MailWorld, rawMessage, startMailWorld } from './setup.ts';

let world: MailWorld;
/** A second instance on the same PostgreSQL schema; on SQLite the first again. */
let second: TestApp | undefined;

before(async () => {
  world = await startMailWorld(['team@placement.test', 'sales@placement.test', 'post@bücher.test']);
  second = await startSecondInstance(world.server, { DNS_SERVERS: world.dns.address });
});
after(async () => {
  await second?.close();
  await world.close();
});

function message(headers: Record<string, string>, body = 'Hello\n') {
  return rawMessage({ From: 'pat@partner.test', To: 'team@placement.test', ...headers }, body);
}

async function positionsOf(threadId: string) {
  const thread = await world.api.get(`/api/e2/mail/threads/${threadId}`);
  assert.equal(thread.status, 200, JSON.stringify(thread.body));
  return {
    count: thread.body.thread.message_count,
    positions: thread.body.messages
      .map((m: { thread_position: number }) => m.thread_position)
      .sort((a: number, b: number) => a - b),
  };
}

test('replies to one parent arriving at once get positions 1 to n and the thread counts them all', async () => {
  const [root] = await world.deliver({
    from: 'pat@partner.test',
    to: 'team@placement.test',
    raw: message({ Subject: 'Rota', 'Message-ID': '<rota@partner.test>' }),
  });
  const { threadId } = (await world.api.get(`/api/v2/mail/${root}`)).body;
  const ports = [world.server.smtpPort, (second ?? world.server).smtpPort];
  // Within the ten connections an address may hold at once (SMTP_MAX_CONNECTIONS_PER_IP).
  const replies = 10;
  const sent = await Promise.all(
    Array.from({ length: replies }, (_, index) =>
      sendMail({
        port: ports[index % 2]!,
        from: 'pat@partner.test',
        to: 'team@placement.test',
        raw: message(
          {
            Subject: 'Re: Rota',
            'Message-ID': `<rota-${index}@partner.test>`,
            'In-Reply-To': '<rota@partner.test>',
            References: '<rota@partner.test>',
          },
          `Reply ${index}\n`,
        ),
      }),
    ),
  );
  assert.deepEqual(
    sent.map((result) => result.ok),
    sent.map(() => true),
  );
  for (const result of sent) {
    assert.equal((await world.api.get(`/api/v2/mail/${result.queuedIds[0]}`)).body.threadId, threadId);
  }
  assert.deepEqual(await positionsOf(threadId), {
    count: replies + 1,
    positions: Array.from({ length: replies + 1 }, (_, index) => index + 1),
  });
});

/** Delivers one message to team@placement.test and reads its thread id and position. */
async function place(headers: Record<string, string>) {
  const [id] = await world.deliver({ from: 'pat@partner.test', to: 'team@placement.test', raw: message(headers) });
  const { threadId, threadPosition } = (await world.api.get(`/api/v2/mail/${id}`)).body;
  return { threadId, threadPosition };
}

test('a reply whose References run to hundreds of ids joins the thread of their first one or its In-Reply-To', async () => {
  const root = await place({ Subject: 'Long chain', 'Message-ID': '<chain-root@partner.test>' });
  const unknown = Array.from({ length: 300 }, (_, index) => `<chain-${index}@elsewhere.test>`);
  const tooLong = `<${'x'.repeat(1200)}@partner.test>`;
  assert.deepEqual(
    await place({
      Subject: 'Re: Long chain',
      'Message-ID': '<chain-reply@partner.test>',
      'In-Reply-To': unknown.at(-1)!,
      References: ['<chain-root@partner.test>', ...unknown, tooLong].join('\r\n '),
    }),
    { threadId: root.threadId, threadPosition: 2 },
  );
  const parent = await place({ Subject: 'Other chain', 'Message-ID': '<other-parent@partner.test>' });
  assert.deepEqual(
    await place({
      Subject: 'Re: Other chain',
      'Message-ID': '<other-reply@partner.test>',
      'In-Reply-To': '<other-parent@partner.test>',
      References: unknown.join('\r\n '),
    }),
    { threadId: parent.threadId, threadPosition: 2 },
  );
});

test('the copies one account receives of a message without a Message-ID share one new thread', async () => {
  const ids = await world.deliver({
    from: 'pat@partner.test',
    to: ['team@placement.test', 'sales@placement.test'],
    raw: message({ Subject: 'No id at all', To: 'team@placement.test, sales@placement.test' }),
  });
  assert.equal(ids.length, 2);
  const [first, second] = await Promise.all(ids.map(async (id) => (await world.api.get(`/api/v2/mail/${id}`)).body));
  assert.deepEqual([first.threadId, first.threadPosition, second.threadPosition], [second.threadId, 1, 2]);
  const thread = await world.api.get(`/api/e2/mail/threads/${first.threadId}`);
  assert.deepEqual([thread.body.thread.root_message_id, thread.body.thread.message_count], [ids[0], 2]);
});

/** Waits until `client` holds up `count` transactions, directly or behind one it holds up. */
async function heldUp(client: pg.Client, count: number) {
  for (let look = 0; look < 400; look++) {
    await client.query('select pg_stat_clear_snapshot()');
    const { rows } = await client.query(
      `with direct as (select pid from pg_stat_activity where pg_backend_pid() = any(pg_blocking_pids(pid)))
       select count(*)::int as count from pg_stat_activity a
        where a.pid in (select pid from direct)
           or exists (select 1 from direct d where d.pid = any(pg_blocking_pids(a.pid)))`,
    );
    if (rows[0].count >= count) return;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  assert.fail(`${count} transactions should be held up`);
}

test('a reply arriving while its thread is erased is stored in a thread that exists', {
  skip: !TEST_DATABASE_URL && 'the race needs two PostgreSQL transactions',
}, async () => {
  const from = 'erased@partner.test';
  const raw = rawMessage(
    { From: from, To: 'team@placement.test', Subject: 'Gone', 'Message-ID': '<gone@partner.test>' },
    'x\n',
  );
  const [root] = await world.deliver({ from, to: 'team@placement.test', raw });
  const { threadId } = (await world.api.get(`/api/v2/mail/${root}`)).body;
  const { schema } = world.server.app.config.database as { schema: string };
  const client = new pg.Client({ connectionString: TEST_DATABASE_URL });
  await client.connect();
  try {
    // This client holds the thread's row, so that the erase and then the reply wait for it, in that order.
    await client.query('begin');
    await client.query(`select id from "${schema}".threads where id = $1 for update`, [threadId]);
    const erased = world.api.post('/api/v2/mail/erase', { emailAddress: from, expectedCount: 1 });
    await heldUp(client, 1);
    const reply = sendMail({
      port: world.server.smtpPort,
      from,
      to: 'team@placement.test',
      raw: message({
        Subject: 'Re: Gone',
        'Message-ID': '<gone-reply@partner.test>',
        References: '<gone@partner.test>',
      }),
    });
    await heldUp(client, 2);
    await client.query('commit');
    assert.equal((await erased).status, 200);
    const [replyId] = (await reply).queuedIds;
    const stored = (await world.api.get(`/api/v2/mail/${replyId}`)).body;
    assert.equal(stored.threadPosition, 1);
    const thread = await world.api.get(`/api/e2/mail/threads/${stored.threadId}`);
    assert.equal(thread.status, 200, JSON.stringify(thread.body));
    assert.deepEqual([thread.body.thread.message_count, thread.body.total_count], [1, 1]);
  } finally {
    await client.end();
  }
});

/** How many raw messages `app` has stored: each is stored as its DATA ends, when it takes its time of arrival. */
async function storedBlobs(app: TestApp) {
  const store = await openFsBlobStore(join(app.dataDir, 'blobs'));
  let count = 0;
  for await (const _blob of store.list('raw/')) count++;
  await store.close();
  return count;
}

test("a thread's last message time is its latest email's when an earlier one is committed after it", {
  skip: !TEST_DATABASE_URL && 'the commits come in another order only with two instances on PostgreSQL',
}, async () => {
  const [root] = await world.deliver({
    from: 'pat@partner.test',
    to: 'team@placement.test',
    raw: message({ Subject: 'Order', 'Message-ID': '<order@partner.test>' }),
  });
  const [held] = await world.deliver({
    from: 'pat@partner.test',
    to: 'team@placement.test',
    raw: message({ Subject: 'Held', 'Message-ID': '<held@partner.test>' }),
  });
  const { threadId } = (await world.api.get(`/api/v2/mail/${root}`)).body;
  const heldThread = (await world.api.get(`/api/v2/mail/${held}`)).body.threadId;
  const { schema } = world.server.app.config.database as { schema: string };
  const client = new pg.Client({ connectionString: TEST_DATABASE_URL });
  await client.connect();
  try {
    // Both of the first instance's write transactions wait for the held thread, so its next message waits its turn.
    // The two replies are sent one after the other: queued together, they would share one transaction.
    await client.query('begin');
    await client.query(`select id from "${schema}".threads where id = $1 for update`, [heldThread]);
    const send = (app: TestApp, id: string, inReplyTo: string) =>
      sendMail({
        port: app.smtpPort,
        from: 'pat@partner.test',
        to: 'team@placement.test',
        raw: message({
          Subject: 'Re',
          'Message-ID': `<${id}@partner.test>`,
          'In-Reply-To': `<${inReplyTo}@partner.test>`,
        }),
      });
    const waiting = [send(world.server, 'held-1', 'held')];
    await heldUp(client, 1);
    waiting.push(send(world.server, 'held-2', 'held'));
    await heldUp(client, 2);
    const before = await storedBlobs(world.server);
    const earlier = send(world.server, 'order-earlier', 'order');
    for (let look = 0; look < 400 && (await storedBlobs(world.server)) === before; look++) {
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
    const later = await send(second!, 'order-later', 'order');
    assert.equal(later.ok, true, later.response);
    await client.query('commit');
    const [earlierId] = (await earlier).queuedIds;
    await Promise.all(waiting);
    const received = async (id: string | undefined) => (await world.api.get(`/api/v2/mail/${id}`)).body.receivedAt;
    assert.ok((await received(earlierId)) < (await received(later.queuedIds[0])));
    const thread = await world.api.get(`/api/e2/mail/threads/${threadId}`);
    assert.equal(thread.body.thread.message_count, 3);
    assert.equal(thread.body.thread.last_message_at, await received(later.queuedIds[0]));
  } finally {
    await client.end();
  }
});

test("GET /api/e2/mail/threads?domain= finds an IDN domain's threads by its Unicode name as by its ASCII one", async () => {
  const [id] = await world.deliver({ to: 'post@xn--bcher-kva.test', subject: 'Bücher' });
  const { threadId } = (await world.api.get(`/api/v2/mail/${id}`)).body;
  for (const name of ['xn--bcher-kva.test', 'bücher.test', 'BÜCHER.test']) {
    const threads = await world.api.get(`/api/e2/mail/threads?domain=${encodeURIComponent(name)}`);
    assert.deepEqual(
      threads.body.threads.map((thread: { id: string }) => thread.id),
      [threadId],
      name,
    );
  }
});

test("a thread's listed latest message has its own preview, from its HTML when it has no text", async () => {
  const html = (headers: Record<string, string>, body: string) =>
    rawMessage(
      { From: 'pat@partner.test', To: 'team@placement.test', 'Content-Type': 'text/html; charset=utf-8', ...headers },
      body,
    );
  await world.deliver({
    from: 'pat@partner.test',
    to: 'team@placement.test',
    raw: html({ Subject: 'Preview', 'Message-ID': '<preview@partner.test>' }, '<p>The first <b>words</b></p>'),
  });
  const [reply] = await world.deliver({
    from: 'pat@partner.test',
    to: 'team@placement.test',
    raw: html(
      { Subject: 'Re: Preview', 'Message-ID': '<preview-reply@partner.test>', References: '<preview@partner.test>' },
      '<style>p { color: red }</style><p>The newest &amp; last <i>words</i></p>',
    ),
  });
  const list = await world.api.get('/api/e2/mail/threads?limit=100');
  const thread = list.body.threads.find(
    (item: { root_message_id: string }) => item.root_message_id === '<preview@partner.test>',
  );
  assert.deepEqual(
    [thread.message_count, thread.latest_message.id, thread.latest_message.text_preview],
    [2, reply, 'The newest & last words'],
  );
});

test('copies of one message arriving at once in two SMTP transactions share a thread', {
  skip: !TEST_DATABASE_URL && 'only PostgreSQL writes two transactions at once',
}, async () => {
  const raw = message({
    Subject: 'Twice',
    To: 'team@placement.test, sales@placement.test',
    'Message-ID': '<twice@partner.test>',
  });
  const [earlier] = await world.deliver({ from: 'pat@partner.test', to: 'team@placement.test', raw: message({}) });
  const { schema } = world.server.app.config.database as { schema: string };
  const client = new pg.Client({ connectionString: TEST_DATABASE_URL });
  await client.connect();
  try {
    // Holding the account's row keeps each transaction from inserting (the rows refer to it) until both have read.
    const { rows } = await client.query(`select account_id from "${schema}".emails where id = $1`, [earlier]);
    await client.query('begin');
    await client.query(`select id from "${schema}".accounts where id = $1 for update`, [rows[0].account_id]);
    const send = (to: string) => sendMail({ port: world.server.smtpPort, from: 'pat@partner.test', to, raw });
    const first = send('team@placement.test');
    await heldUp(client, 1);
    const second = send('sales@placement.test');
    await heldUp(client, 2);
    await client.query('commit');
    const ids = [(await first).queuedIds[0], (await second).queuedIds[0]];
    const stored = await Promise.all(ids.map(async (id) => (await world.api.get(`/api/v2/mail/${id}`)).body));
    assert.deepEqual(
      stored.map((email) => [email.threadId, email.threadPosition]),
      [
        [stored[0].threadId, 1],
        [stored[0].threadId, 2],
      ],
    );
  } finally {
    await client.end();
  }
});

test("a Message-ID or reply naming another account's message never joins that account's thread", async () => {
  const other = apiClient(world.server.baseUrl, await world.server.newAccountKey('other-placement'));
  const domain = await createVerifiedDomain(other, world.dns, 'elsewhere-placement.test');
  assert.equal(
    (await other.post('/api/v2/email-addresses', { address: 'desk@elsewhere-placement.test', domainId: domain.id }))
      .status,
    201,
  );
  const own = await place({ Subject: 'Private', 'Message-ID': '<private@partner.test>' });
  const send = async (to: string, headers: Record<string, string>) => {
    const [id] = await world.deliver({
      from: 'pat@partner.test',
      to,
      raw: message({ To: to, ...headers }, `${headers['Message-ID']}\n`),
    });
    return (await other.get(`/api/v2/mail/${id}`)).body;
  };
  const forged = await send('desk@elsewhere-placement.test', {
    Subject: 'Forged',
    'Message-ID': '<private@partner.test>',
  });
  const reply = await send('desk@elsewhere-placement.test', {
    Subject: 'Re: Private',
    'Message-ID': '<private-reply@partner.test>',
    'In-Reply-To': '<private@partner.test>',
  });
  assert.deepEqual([forged.threadPosition, reply.threadId, reply.threadPosition], [1, forged.threadId, 2]);
  assert.notEqual(forged.threadId, own.threadId);
  const mine = await world.api.get(`/api/e2/mail/threads/${own.threadId}`);
  assert.deepEqual([mine.body.thread.message_count, mine.body.total_count], [1, 1]);
  assert.equal((await other.get(`/api/e2/mail/threads/${own.threadId}`)).status, 404);
});
