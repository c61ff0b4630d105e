import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, beforeEach, test } from 'node:test';
import { sql, type Transaction } from 'kysely';
import {
  CommitOutcomeUnknown,
  type Database,
  type DatabaseHandle,
  GroupCommitter,
  openDatabase,
} from '../../src/db/index.ts';

let dir: string;
let handle: DatabaseHandle;

before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'mailroom-committer-'));
  handle = await openDatabase({ kind: 'sqlite', file: join(dir, 'db.sqlite'), synchronous: 'FULL' });
  // A child row whose parent is missing passes its INSERT and fails the COMMIT (the check is deferred to it).
  await sql`create table parents (id integer primary key)`.execute(handle.db);
  await sql`create table children (parent_id integer references parents (id) deferrable initially deferred)`.execute(
    handle.db,
  );
  await sql`insert into parents (id) values (1)`.execute(handle.db);
});
after(async () => {
  await handle.close();
  await rm(dir, { recursive: true, force: true });
});
beforeEach(async () => {
  await sql`delete from children`.execute(handle.db);
});

const childIds = async () =>
  (await sql<{ parent_id: number }>`select parent_id from children order by rowid`.execute(handle.db)).rows.map(
    (row) => row.parent_id,
  );

/** Queues units in one tick, so that they share a transaction, and settles them all. */
function runTogether(committer: GroupCommitter, parents: Array<number | 'throw'>, calls: number[]) {
  return Promise.allSettled(
    parents.map((parent, index) =>
      committer.run(async (trx) => {
        calls.push(index);
        if (parent === 'throw') throw new Error(`unit ${index} refused`);
        await sql`insert into children (parent_id) values (${parent})`.execute(trx);
        return index;
      }),
    ),
  );
}

test('a unit that throws is rejected with its own error, and the others of its batch still commit', async () => {
  const calls: number[] = [];
  const results = await runTogether(new GroupCommitter(handle.db), [1, 'throw', 1], calls);
  assert.deepEqual(
    results.map((result) => (result.status === 'fulfilled' ? result.value : (result.reason as Error).message)),
    [0, 'unit 1 refused', 2],
  );
  // The shared attempt ran units 0 and 1; then each was committed alone.
  assert.deepEqual(calls, [0, 1, 0, 1, 2]);
  assert.deepEqual(await childIds(), [1, 1]);
});

test('a COMMIT that fails rejects the whole batch as CommitOutcomeUnknown, and no unit is run again', async () => {
  const calls: number[] = [];
  const results = await runTogether(new GroupCommitter(handle.db), [1, 99, 1], calls);
  for (const result of results) {
    assert.equal(result.status, 'rejected');
    const reason = (result as PromiseRejectedResult).reason as Error;
    assert.ok(reason instanceof CommitOutcomeUnknown);
    assert.match(reason.message, /^commit failed: FOREIGN KEY constraint failed$/);
  }
  // Retrying the units one by one could store twice what a COMMIT of unknown outcome did store.
  assert.deepEqual(calls, [0, 1, 2]);
  assert.deepEqual(await childIds(), []);
});

test('a unit alone whose COMMIT fails is rejected as CommitOutcomeUnknown', async () => {
  const calls: number[] = [];
  const [result] = await runTogether(new GroupCommitter(handle.db), [99], calls);
  assert.ok(result!.status === 'rejected' && result!.reason instanceof CommitOutcomeUnknown);
  assert.deepEqual(calls, [0]);
  assert.deepEqual(await childIds(), []);
});

test('units run one by one: a transaction that frees up takes only its share of what queued while all were busy', async () => {
  // SQLite runs one transaction at a time, so the second waits for the first; the committer counts both as running.
  const committer = new GroupCommitter(handle.db, { concurrency: 2 });
  const units = new Map<unknown, number[]>();
  const hold = Promise.withResolvers<void>();
  const unit = (index: number, until?: Promise<void>) =>
    committer.run(async (trx) => {
      units.set(trx, [...(units.get(trx) ?? []), index]);
      await until;
      await sql`insert into children (parent_id) values (1)`.execute(trx);
    });
  const first = unit(0, hold.promise);
  await new Promise((resolve) => setTimeout(resolve, 20));
  const queued = [1, 2, 3, 4, 5, 6, 7].map((index) => unit(index));
  hold.resolve();
  await Promise.all([first, ...queued]);
  const batches = [...units.values()].sort((a, b) => a[0]! - b[0]!);
  assert.deepEqual(batches, [[0], [1], [2, 3, 4], [5, 6], [7]]);
});

test('batched items queued while all transactions were busy go into the next one together', async () => {
  const committer = new GroupCommitter(handle.db, { concurrency: 2 });
  const batches: number[][] = [];
  const hold = Promise.withResolvers<void>();
  const write = async (trx: Transaction<Database>, items: readonly number[]) => {
    batches.push([...items]);
    if (items.includes(0)) await hold.promise;
    for (const _ of items) await sql`insert into children (parent_id) values (1)`.execute(trx);
    return items.map((item) => item * 10);
  };
  const first = committer.runBatched(0, write);
  await new Promise((resolve) => setTimeout(resolve, 20));
  const queued = [1, 2, 3, 4, 5, 6, 7].map((item) => committer.runBatched(item, write));
  hold.resolve();
  assert.deepEqual(await Promise.all([first, ...queued]), [0, 10, 20, 30, 40, 50, 60, 70]);
  assert.deepEqual(batches, [[0], [1], [2, 3, 4, 5, 6, 7]]);
});
