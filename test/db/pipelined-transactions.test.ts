import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, beforeEach, test } from 'node:test';
import { sql } from 'kysely';
import {
  CommitOutcomeUnknown,
  type DatabaseHandle,
  GroupCommitter,
  openDatabase,
  preparedQuery,
} from '../../src/db/index.ts';
import { TEST_DATABASE_URL } from '../helpers/app.ts';
import { eventually } from '../helpers/eventually.ts';
import { startPostgresProxy } from '../helpers/tcp-proxy.ts';

/**
 * Transactions on a pool that pipelines (ingest's writer's, see pipelineTransactions): a write sent ahead of COMMIT
 * fails as it would alone, and only a COMMIT that itself fails leaves the outcome unknown.
 */
const skip = TEST_DATABASE_URL ? false : 'needs TEST_DATABASE_URL (PostgreSQL)';
const schema = `t_${randomBytes(6).toString('hex')}`;
let handle: DatabaseHandle;

/**
 * A child row, sent ahead: a missing parent fails the COMMIT (the check is deferred to it), a repeated id the insert.
 */
const insertChild = preparedQuery(
  (db, { id, parentId }: { id: number; parentId: number }) => ({
    compile: () => sql`insert into children (id, parent_id) values (${id}, ${parentId})`.compile(db),
  }),
  { sentAhead: true },
);

before(async () => {
  if (skip) return;
  handle = await openDatabase(
    { kind: 'postgres', url: TEST_DATABASE_URL!, schema, poolSize: 2, connectTimeoutMs: 10_000 },
    { pipeline: true },
  );
  await sql`create table parents (id integer primary key)`.execute(handle.db);
  await sql`create table children (
    id integer primary key,
    parent_id integer references parents (id) deferrable initially deferred
  )`.execute(handle.db);
  await sql`insert into parents (id) values (1)`.execute(handle.db);
});
after(async () => {
  if (skip) return;
  await sql`drop schema ${sql.id(schema)} cascade`.execute(handle.db);
  await handle.close();
});
beforeEach(async () => {
  if (!skip) await sql`delete from children`.execute(handle.db);
});

const childIds = async () =>
  (await sql<{ id: number }>`select id from children order by id`.execute(handle.db)).rows.map((row) => row.id);

/** Queues one unit per child in one tick, so that they share a transaction, and settles them all. */
function runTogether(children: Array<{ id: number; parentId: number; followedBy?: 'select' }>, calls: number[]) {
  const committer = new GroupCommitter(handle.db);
  return Promise.allSettled(
    children.map(({ id, parentId, followedBy }) =>
      committer.run(async (trx) => {
        calls.push(id);
        await insertChild(trx, { id, parentId });
        if (followedBy === 'select') await sql`select 1`.execute(trx);
        return id;
      }),
    ),
  );
}

const outcome = (result: PromiseSettledResult<number>) =>
  result.status === 'fulfilled'
    ? result.value
    : result.reason instanceof CommitOutcomeUnknown
      ? 'unknown'
      : (result.reason as { code?: string }).code;

test("a write sent ahead of COMMIT that fails is its unit's error, and the others of its batch still commit", {
  skip,
}, async () => {
  const calls: number[] = [];
  await sql`insert into children (id, parent_id) values (2, 1)`.execute(handle.db);
  const results = await runTogether(
    [
      { id: 1, parentId: 1 },
      { id: 2, parentId: 1 },
      { id: 3, parentId: 1 },
    ],
    calls,
  );
  // 23505: unique violation, the insert's own error, not a COMMIT of unknown outcome.
  assert.deepEqual(results.map(outcome), [1, '23505', 3]);
  // The shared attempt failed at its COMMIT, which rolled it back: then each unit was committed alone.
  assert.deepEqual(calls, [1, 2, 3, 1, 2, 3]);
  assert.deepEqual(await childIds(), [1, 2, 3]);
});

test('a write sent ahead that fails is the error of the statement after it', { skip }, async () => {
  await sql`insert into children (id, parent_id) values (2, 1)`.execute(handle.db);
  const [result] = await runTogether([{ id: 2, parentId: 1, followedBy: 'select' }], []);
  assert.equal(outcome(result!), '23505');
});

test('a COMMIT that fails after a write sent ahead leaves the outcome unknown, and no unit runs again', {
  skip,
}, async () => {
  const calls: number[] = [];
  const results = await runTogether(
    [
      { id: 1, parentId: 1 },
      { id: 2, parentId: 99 },
    ],
    calls,
  );
  assert.deepEqual(results.map(outcome), ['unknown', 'unknown']);
  assert.deepEqual(calls, [1, 2]);
  assert.deepEqual(await childIds(), []);
});

test('BEGIN sent ahead of a read, then a write: the transaction holds both, and rolls back whole', {
  skip,
}, async () => {
  const failed = await handle.db
    .transaction()
    .execute(async (trx) => {
      assert.deepEqual((await sql<{ n: number }>`select 1 as n`.execute(trx)).rows, [{ n: 1 }]);
      await insertChild(trx, { id: 4, parentId: 1 });
      throw new Error('rolled back');
    })
    .catch((error: Error) => error.message);
  assert.equal(failed, 'rolled back');
  assert.deepEqual(await childIds(), []);
});

test('BEGIN and a write sent ahead are not waited for: the transaction goes on while nothing comes back', {
  skip,
}, async () => {
  const { proxy, url } = await startPostgresProxy(TEST_DATABASE_URL!);
  const proxied = await openDatabase(
    { kind: 'postgres', url, schema, poolSize: 1, connectTimeoutMs: 10_000 },
    { pipeline: true, keepConnections: 1 },
  );
  const steps: string[] = [];
  proxy.stall();
  const committed = proxied.db.transaction().execute(async (trx) => {
    steps.push('begun');
    await sql`select 1`.execute(trx);
    proxy.stall();
    await insertChild(trx, { id: 5, parentId: 1 });
    steps.push('inserted');
  });
  try {
    await eventually(async () => steps.includes('begun'), 'the transaction went on past BEGIN unanswered');
    proxy.resume();
    await eventually(async () => steps.includes('inserted'), 'the transaction went on past its insert unanswered');
    proxy.resume();
    await committed;
    assert.deepEqual(await childIds(), [5]);
  } finally {
    // Dropped, so that a transaction still waiting for an answer fails rather than holds the pool's close.
    proxy.cut();
    await committed.catch(() => {});
    await proxied.close();
    await proxy.close();
  }
});
