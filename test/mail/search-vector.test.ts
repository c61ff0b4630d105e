import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { sql } from 'kysely';
import { startSearchIndex, WORD_RULE_VERSION } from '../../src/search/index.ts';
import { TEST_DATABASE_URL } from '../helpers/app.ts';
import { type MailWorld, startMailWorld } from './setup.ts';

/**
 * PostgreSQL's search vectors are written by ingest (src/search/postgres-search-vectors.ts), no longer computed by
 * the database (migration 0015). For text whose words the database's `[[:alnum:]]` and the search word rule split
 * alike, they must be exactly what the database computed: the same words at the same positions and weights, within
 * the same limits. The database still computes one for a row inserted without one, and for an UPDATE of an indexed
 * field, which is how the test reads what it would have computed.
 */

const POSTGRES_ONLY = { skip: TEST_DATABASE_URL ? false : 'search vectors are PostgreSQL-only' };

let world: MailWorld;

before(async () => {
  world = await startMailWorld(['inbox@vectors.test', 'second@vectors.test']);
});
after(async () => {
  await world?.close();
});

async function storedVector(id: string): Promise<string> {
  const { rows } = await sql<{
    vector: string;
  }>`select search_vector::text as vector from emails where id = ${id}`.execute(world.server.app.database.db);
  return rows[0]!.vector;
}

/** The vector PostgreSQL computes for the row (migration 0015's trigger on an UPDATE of an indexed field). */
async function databaseVector(id: string): Promise<string> {
  const { rows } = await sql<{ vector: string }>`
    update emails set subject = subject where id = ${id} returning search_vector::text as vector`.execute(
    world.server.app.database.db,
  );
  return rows[0]!.vector;
}

async function databaseKnowsUnicodeLetters(): Promise<boolean> {
  const { rows } = await sql<{ ctype: string }>`
    select datctype as ctype from pg_database where datname = current_database()`.execute(world.server.app.database.db);
  return !['C', 'POSIX'].includes(rows[0]!.ctype);
}

const longWord = (letter: string, bytes: number) => letter.repeat(bytes);

const messages = [
  {
    name: 'punctuation, addresses and numbers',
    subject: 'Re: [Ticket #4521] Invoice 2026-11 (final!) — pay_now',
    text: 'Visit https://shop.example.com/a/b?c=d&e=f or write to Billing.Team@example.com.\r\nTotal: $1,234.56; ref abc123def 3.14 v1.2.3',
  },
  {
    name: 'letters of other scripts and accents',
    // Under a `C` ctype the database's `[[:alnum:]]` knows no letters past ASCII (see migration 0005). The word rule
    // folds further than the database: `ß`, a final `ς`, compatibility forms and marks are left out here.
    unicode: true,
    subject: 'Ünïcödé Strasse déjà vu',
    text: 'Русский текст. 中文字符 日本語テキスト العربية עברית Ελληνικά naïve café',
  },
  {
    name: 'a word past 255 positions and a body past 20,000 characters',
    subject: 'the the the',
    text: `${longWord('y', 2047)} ${longWord('z', 2048)} ${'é'.repeat(1024)} ${'the cat sat on the mat '.repeat(900)} tail`,
  },
  { name: 'empty subject and body', subject: '', text: '' },
];

for (const message of messages) {
  test(`PostgreSQL: ingest writes the vector the database would compute: ${message.name}`, POSTGRES_ONLY, async (t) => {
    if ('unicode' in message && !(await databaseKnowsUnicodeLetters())) {
      t.skip('the database ctype is C or POSIX');
      return;
    }
    const [id] = await world.deliver({
      from: 'Sender Name <sender.name@elsewhere.test>',
      to: 'inbox@vectors.test',
      headers: { Cc: 'Carol Copy <carol@cc.test>, dave@cc.test' },
      subject: message.subject,
      text: message.text,
    });
    const stored = await storedVector(id!);
    assert.notEqual(stored, '');
    assert.equal(stored, await databaseVector(id!));
  });
}

test(
  'PostgreSQL: each recipient row of one message has its own vector, the one the database computes',
  POSTGRES_ONLY,
  async () => {
    const ids = await world.deliver({
      to: ['inbox@vectors.test', 'second@vectors.test'],
      headers: { Cc: 'Carol Copy <carol@cc.test>' },
      subject: 'two rows, one message',
      text: 'shared body words',
    });
    assert.equal(ids.length, 2);
    const vectors = [];
    for (const id of ids) {
      const stored = await storedVector(id);
      assert.equal(stored, await databaseVector(id));
      vectors.push(stored);
    }
    assert.notEqual(vectors[0], vectors[1]);
  },
);

test('PostgreSQL: a row inserted without a vector gets the one the database computes', POSTGRES_ONLY, async () => {
  const [id] = await world.deliver({
    to: 'inbox@vectors.test',
    subject: 'copied without its vector',
    text: 'kingfisher heron',
  });
  const db = world.server.app.database.db;
  const copy = `${id}_copy`;
  // One transaction, so that every statement runs on the connection that holds the temporary table.
  await db.transaction().execute(async (trx) => {
    await sql`create temporary table copied on commit drop as select * from emails where id = ${id}`.execute(trx);
    await sql`update copied set id = ${copy}, search_vector = null`.execute(trx);
    await sql`insert into emails select * from copied`.execute(trx);
  });
  try {
    assert.equal(await storedVector(copy), await storedVector(id!));
  } finally {
    await db.deleteFrom('emails').where('id', '=', copy).execute();
  }
});

test(
  'PostgreSQL: vectors of an earlier word rule are built again from the start, only where a character is past ASCII',
  POSTGRES_ONLY,
  async () => {
    const { app } = world.server;
    const db = app.database.db;
    const [unicode] = await world.deliver({ to: 'inbox@vectors.test', subject: 'हिन्दी Straße', text: 'ΟΔΟΣ ﬁle' });
    const [ascii] = await world.deliver({ to: 'inbox@vectors.test', subject: 'plain words', text: 'only ascii' });
    const written = await storedVector(unicode!);
    const findsUnicode = async () => {
      const response = await world.api.get(`/api/v2/mail?search=${encodeURIComponent('हिन्दी strasse')}`);
      return response.body.emails.map((email: { id: string }) => email.id);
    };
    assert.deepEqual(await findsUnicode(), [unicode]);
    // Vectors as an earlier rule left them: the database's own words for one, a marker for the other.
    await databaseVector(unicode!);
    await sql`update emails set search_vector = 'marker' where id = ${ascii}`.execute(db);
    await sql`update search_word_rule set version = 1`.execute(db);
    assert.deepEqual(await findsUnicode(), []);

    const version = async () =>
      (await sql<{ version: number }>`select version from search_word_rule`.execute(db)).rows[0]!.version;
    // What a process of this rule starts, as this server did at its start.
    const rebuild = startSearchIndex(app.config.database, db, app.logger);
    while ((await version()) !== WORD_RULE_VERSION) await sleep(20);
    await rebuild.stop();
    assert.equal(await storedVector(unicode!), written);
    assert.equal(await storedVector(ascii!), "'marker'");
    assert.deepEqual(await findsUnicode(), [unicode]);
  },
);
