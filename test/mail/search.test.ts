import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { sql } from 'kysely';
import { systemClock } from '../../src/core/index.ts';
import { HtmlCleaner, MailService } from '../../src/mail/index.ts';
import { extractAttachment, hashAttachments } from '../../src/mime/index.ts';
import { PostgresMailPages } from '../../src/search/index.ts';
import type { ApiClient } from '../helpers/http.ts';
import { type MailWorld, rawMessage, startMailWorld } from './setup.ts';

/**
 * One table of searches, run the same way on SQLite (FTS5) and PostgreSQL (tsvector + GIN): each must return exactly
 * the listed messages. The suite runs it on whichever database TEST_DATABASE_URL selects.
 */

let world: MailWorld;
let api: ApiClient;
const ids = new Map<string, string>();

interface Sample {
  key: string;
  from: string;
  to: string;
  cc?: string;
  subject: string;
  body: string;
  attachment?: string;
}

const SAMPLES: Sample[] = [
  {
    key: 'S1',
    from: '"Alice Anders" <alice@acme.test>',
    to: 'inbox@search.test',
    subject: 'Invoice 2041 for March',
    body: 'Payment due on the first of April. Thanks, Alice',
  },
  {
    key: 'S2',
    from: 'bob@builder.test',
    to: 'support@search.test',
    subject: 'Re: Invoice 2041 for March',
    body: 'I paid the invoice yesterday',
  },
  {
    key: 'S3',
    from: 'carol@acme.test',
    to: 'billing@search.test',
    cc: 'inbox@search.test',
    subject: 'Café menu',
    body: 'Crème brûlée and espresso',
    attachment: 'menu.pdf',
  },
  {
    key: 'S4',
    from: 'dave@example.test',
    to: 'inbox@search.test',
    subject: 'Meeting notes',
    body: 'The quarterly review meeting moved to Friday. See attachment.',
    attachment: 'notes.txt',
  },
  {
    key: 'S5',
    from: '"Shop Team" <noreply@shop.test>',
    to: 'inbox@search.test',
    subject: 'Your order has shipped',
    body: 'Order #55813 shipped via express courier',
  },
  {
    key: 'S6',
    from: 'alice@acme.test',
    to: 'support@search.test',
    subject: 'Password reset',
    body: 'Click the link to reset your password',
  },
  { key: 'S7', from: 'eve@evil.test', to: 'inbox@search.test', subject: '', body: 'invoice overdue final notice' },
  {
    key: 'S8',
    from: '"Zoë Müller" <zoe@umlaut.test>',
    to: 'billing@search.test',
    subject: 'Überweisung erhalten',
    body: 'Vielen Dank für die Zahlung',
  },
  // Words that are numbers without being digits, which PostgreSQL's own parser does not see as words.
  { key: 'S9', from: 'frank@kitchen.test', to: 'inbox@search.test', subject: 'Recipe', body: 'Add ½ cup, then stir ①' },
  // Letters whose lower case FTS5's unicode61 tokenizer and JavaScript disagreed on (İ lower-cases to two characters).
  { key: 'S10', from: 'gul@istanbul.test', to: 'billing@search.test', subject: 'İzmir ΟΔΟΣ', body: 'Bore 40 µm' },
  // Vowel signs inside Devanagari words, a ligature and full-width letters, ß.
  { key: 'S11', from: 'ravi@patra.test', to: 'billing@search.test', subject: 'हिन्दी पत्र', body: 'Große ﬁle ＡＢＣ１' },
  // Japanese and Chinese, written without spaces between words.
  {
    key: 'S12',
    from: 'ken@tokyo.test',
    to: 'billing@search.test',
    subject: '東京の天気予報',
    body: '明日は晴れ。中文邮件测试',
  },
];

/**
 * A word of 2,100 bytes in 700 characters (a search has at most 1,000): FTS5 indexes it, PostgreSQL's vectors cannot
 * hold it (see fitsPostgresIndex).
 */
const LONG_WORD = '语'.repeat(700);

const day = (offset: number) => new Date(Date.now() + offset * 86_400_000).toISOString().slice(0, 10);

/** search → the samples it finds. Archived mail is left out by the list, and none of these is archived. */
const TABLE: Array<[string, string[]]> = [
  ['invoice', ['S1', 'S2', 'S7']],
  ['INVO', ['S1', 'S2', 'S7']],
  ['from:alice', ['S1', 'S6']],
  ['from:acme', ['S1', 'S3', 'S6']],
  ['from:alice@acme.test', ['S1', 'S6']],
  ['from:alice@acme.tes', []],
  ['from:ali', ['S1', 'S6']],
  ['from:"alice anders"', ['S1']],
  ['to:support', ['S2', 'S6']],
  ['to:inbox', ['S1', 'S3', 'S4', 'S5', 'S7', 'S9']],
  ['subject:invoice', ['S1', 'S2']],
  ['subject:"invoice 2041"', ['S1', 'S2']],
  ['"for march"', ['S1', 'S2']],
  ['"march for"', []],
  ['"march bob"', []],
  ['has:attachment', ['S3', 'S4']],
  ['has:attachment meeting', ['S4']],
  ['-has:attachment meeting', []],
  ['is:read', ['S2']],
  ['is:unread invoice', ['S1', 'S7']],
  ['invoice -subject:re', ['S1', 'S7']],
  ['-invoice', ['S3', 'S4', 'S5', 'S6', 'S8', 'S9', 'S10', 'S11', 'S12']],
  ['-from:acme -to:inbox', ['S2', 'S8', 'S10', 'S11', 'S12']],
  ['café', ['S3']],
  ['brûlée espresso', ['S3']],
  ['zoë müller', ['S8']],
  ['ÜBERWEISUNG', ['S8']],
  ['55813', ['S5']],
  ['order shipped', ['S5']],
  ['"order has shipped"', ['S5']],
  ['from:"shop team"', ['S5']],
  ['to:billing has:attachment', ['S3']],
  ['passw', ['S6']],
  ['reset -from:bob', ['S6']],
  ['example', ['S4']],
  ['nonexistentword', []],
  ['½', ['S9']],
  ['"½ cup"', ['S9']],
  ['① recipe', ['S9']],
  ['İzmir', ['S10']],
  ['subject:"İzmir οδος"', ['S10']],
  ['µm', ['S10']],
  ['μm', ['S10']],
  ['οδοσ', ['S10']],
  ['हिन्दी', ['S11']],
  ['हि', ['S11']],
  ['हन्द', []],
  ['grosse', ['S11']],
  ['GROSSE file', ['S11']],
  ['abc1', ['S11']],
  ['ＡＢ', ['S11']],
  ['to:inbox -①', ['S1', 'S3', 'S4', 'S5', 'S7']],
  ['東京', ['S12']],
  ['天気', ['S12']],
  ['予報', ['S12']],
  ['subject:天気予報', ['S12']],
  ['晴れ', ['S12']],
  ['邮件 测试', ['S12']],
  ['気天', []],
  ['京都', []],
  ['-天気 to:billing', ['S3', 'S8', 'S10', 'S11']],
  [LONG_WORD, []],
  [`"invoice ${LONG_WORD}"`, []],
  [`invoice -${LONG_WORD}`, ['S1', 'S2', 'S7']],
  [`-${LONG_WORD} -from:acme -to:inbox`, ['S2', 'S8', 'S10', 'S11', 'S12']],
  [`after:${day(0)}`, ['S1', 'S2', 'S3', 'S4', 'S5', 'S6', 'S7', 'S8', 'S9', 'S10', 'S11', 'S12']],
  [`before:${day(0)}`, []],
  [`before:${day(1)} from:eve`, ['S7']],
  [`-before:${day(1)}`, []],
  // A positive term with no letter or digit has nothing to look for and matches nothing; negated, it excludes nothing.
  ['🎉', []],
  ['subject:☕', []],
  ['*', []],
  ['"', []],
  ['-', []],
  ['to:""', []],
  ['invoice 🎉', []],
  ['has:attachment *', []],
  ['-🎉', ['S1', 'S2', 'S3', 'S4', 'S5', 'S6', 'S7', 'S8', 'S9', 'S10', 'S11', 'S12']],
  ['invoice -subject:☕ -""', ['S1', 'S2', 'S7']],
  ['is:read -*', ['S2']],
];

function messageOf(sample: Sample): string {
  const headers = {
    From: sample.from,
    To: sample.to,
    ...(sample.cc ? { Cc: sample.cc } : {}),
    Subject: sample.subject,
    'Message-ID': `<${sample.key}@search.test>`,
    Date: 'Wed, 04 Mar 2026 08:00:00 +0000',
  };
  if (!sample.attachment) {
    return rawMessage({ ...headers, 'Content-Type': 'text/plain; charset=utf-8' }, `${sample.body}\n`);
  }
  return rawMessage(
    { ...headers, 'Content-Type': 'multipart/mixed; boundary="m"' },
    [
      '--m',
      'Content-Type: text/plain; charset=utf-8',
      '',
      sample.body,
      '--m',
      `Content-Type: application/octet-stream; name="${sample.attachment}"`,
      `Content-Disposition: attachment; filename="${sample.attachment}"`,
      'Content-Transfer-Encoding: base64',
      '',
      Buffer.from(`contents of ${sample.attachment}`).toString('base64'),
      '--m--',
      '',
    ].join('\n'),
  );
}

before(async () => {
  world = await startMailWorld(['inbox@search.test', 'support@search.test', 'billing@search.test']);
  api = world.api;
  for (const sample of SAMPLES) {
    const envelopeFrom = /<([^>]+)>/.exec(sample.from)?.[1] ?? sample.from;
    const [id] = await world.deliver({ from: envelopeFrom, to: sample.to, raw: messageOf(sample) });
    ids.set(sample.key, id!);
  }
  await api.patch(`/api/v2/mail/${ids.get('S2')}`, { isRead: true });
});
after(() => world.close());

describe('search table (identical on SQLite and PostgreSQL)', () => {
  const keyOf = (id: string) => [...ids].find(([, value]) => value === id)?.[0];
  for (const [search, expected] of TABLE) {
    const shown = search.length > 60 ? `${search.slice(0, 60)}…` : search;
    test(`search=${shown} finds ${expected.join(', ') || 'nothing'}`, async () => {
      const response = await api.get(`/api/v2/mail?limit=100&search=${encodeURIComponent(search)}`);
      assert.equal(response.status, 200, JSON.stringify(response.body));
      const found = response.body.emails.map((email: { id: string }) => keyOf(email.id)).sort();
      assert.deepEqual(found, [...expected].sort());
      assert.equal(response.body.pagination.total, expected.length);
    });
  }
});

describe('a search has at most 1,000 characters and 50 terms', () => {
  test('50 terms of every kind within 1,000 characters are searched; one more term or character is a 400', async () => {
    const kinds = ['word', '-"two words"', 'from:x@y.test', '-subject:never', 'is:unread'];
    const terms = Array.from({ length: 50 }, (_, index) => kinds[index % kinds.length]);
    const fifty = terms.join(' ');
    assert.ok(fifty.length <= 1_000);
    const list = (search: string) => api.get(`/api/v2/mail?search=${encodeURIComponent(search)}`);
    const searched = await list(fifty);
    assert.deepEqual([searched.status, searched.body.pagination.total], [200, 0]);
    const tooMany = await list(`${fifty} word`);
    assert.deepEqual([tooMany.status, tooMany.body], [400, { error: 'search must have at most 50 terms' }]);
    const tooLong = 'x'.repeat(1_001);
    const refused = { error: 'search must be at most 1,000 characters' };
    assert.deepEqual([(await list(tooLong)).status, (await list(tooLong)).body], [400, refused]);
    // An erase's filter comes in the body, which no URL limit bounds.
    const erase = await api.post('/api/v2/mail/erase', { search: 'word '.repeat(10_000), dryRun: true });
    assert.deepEqual([erase.status, erase.body], [400, refused]);
  });
});

describe('the search reads the index', () => {
  test('the plan of a search list query uses FTS5 (SQLite) or the GIN index (PostgreSQL), not a scan of emails', async () => {
    const { app } = world.server;
    const account = await app.database.db
      .selectFrom('accounts')
      .select('id')
      .where('name', '=', 'default')
      .executeTakeFirstOrThrow();
    const filter = { search: 'invoice from:alice' };
    if (app.database.kind === 'sqlite') {
      const plan = await app.mail.explainList(account.id, filter);
      assert.ok(
        plan.some((line) => /emails_fts VIRTUAL TABLE INDEX/.test(line)),
        plan.join('\n'),
      );
      assert.ok(
        plan.some((line) => /SEARCH emails USING INTEGER PRIMARY KEY \(rowid=\?\)/.test(line)),
        plan.join('\n'),
      );
      assert.ok(!plan.some((line) => /^SCAN emails\b/.test(line)), plan.join('\n'));
      return;
    }
    // With a handful of rows the planner rightly prefers the account's b-tree index. Inside a transaction that is
    // rolled back, those indexes are dropped and plain scans are turned off: what remains shows that the GIN index
    // answers this exact query.
    let plan: string[] = [];
    const rollback = new Error('rollback');
    await app.database.db
      .transaction()
      .execute(async (trx) => {
        await sql`drop index emails_account_received, emails_account_domain_received`.execute(trx);
        await sql`drop index emails_account_archived_received`.execute(trx);
        await sql`drop index emails_account_thread, emails_account_message_id`.execute(trx);
        await sql`drop index emails_recipient_account_archived`.execute(trx);
        await sql`set local enable_seqscan = off`.execute(trx);
        plan = await app.mail.explainList(account.id, filter, trx);
        throw rollback;
      })
      .catch((error) => {
        if (error !== rollback) throw error;
      });
    assert.ok(
      plan.some((line) => /Bitmap Index Scan on emails_search/.test(line)),
      plan.join('\n'),
    );
    assert.ok(!plan.some((line) => /Seq Scan on emails/.test(line)), plan.join('\n'));
  });
});

describe('PostgreSQL: the search table again once ANALYZE has counted the words', () => {
  test('every search finds the same messages when its words count as common (other plans: a newest-first count, negated words tested outside GIN)', async (t) => {
    const { app } = world.server;
    if (app.database.kind !== 'postgres') return t.skip('word statistics are PostgreSQL-only');
    await sql`analyze emails`.execute(app.database.db);
    // A new service reads the statistics afresh; in this small table every word is in at least one email of nine.
    const withStatistics = new MailService({
      db: app.database.db,
      pages: new PostgresMailPages(app.database.db),
      clock: systemClock,
      raw: app.blobs,
      extractAttachment,
      hashAttachments,
      cleaner: new HtmlCleaner(),
    });
    const accountId = (await app.database.db.selectFrom('emails').select('account_id').executeTakeFirstOrThrow())
      .account_id;
    const keyOf = (id: string) => [...ids].find(([, value]) => value === id)?.[0];
    for (const [search, expected] of TABLE) {
      const list = await withStatistics.list(accountId, { search }, { limit: 100, offset: 0 });
      assert.deepEqual(list.emails.map((email) => keyOf(email.id)).sort(), [...expected].sort(), search);
      assert.equal(list.total, expected.length, search);
    }
  });
});
