import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { test } from 'node:test';
import pg from 'pg';
import { loadConfig } from '../../src/config/index.ts';
import { migrateToLatest, openDatabase } from '../../src/db/index.ts';
import { TEST_DATABASE_URL } from '../helpers/app.ts';

/** How many servers start at once, and how many times: PostgreSQL's race between two creators is narrow. */
const SERVERS = 3;
const ROUNDS = 5;

async function dropSchema(schema: string) {
  const client = new pg.Client({ connectionString: TEST_DATABASE_URL });
  await client.connect();
  try {
    await client.query(`drop schema if exists "${schema}" cascade`);
  } finally {
    await client.end();
  }
}

test('servers starting at once on a schema that does not exist yet all start, and each migration is applied once', {
  skip: TEST_DATABASE_URL ? false : 'needs TEST_DATABASE_URL (PostgreSQL)',
}, async () => {
  for (let round = 0; round < ROUNDS; round++) {
    const schema = `start_${randomBytes(6).toString('hex')}`;
    const config = loadConfig({ DATABASE_URL: TEST_DATABASE_URL!, DATABASE_SCHEMA: schema, DATABASE_POOL_SIZE: '2' });
    const opened = await Promise.allSettled(Array.from({ length: SERVERS }, () => openDatabase(config.database)));
    const handles = opened.flatMap((result) => (result.status === 'fulfilled' ? [result.value] : []));
    try {
      assert.deepEqual(
        opened.flatMap((result) => (result.status === 'rejected' ? [String(result.reason)] : [])),
        [],
        `round ${round}`,
      );
      const applied = await Promise.all(handles.map((handle) => migrateToLatest(handle)));
      const all = applied.flat();
      assert.equal(new Set(all).size, all.length, 'no migration applied twice');
      const [handle] = handles;
      const recorded = await handle!.db
        .selectFrom('mailroom_migrations' as never)
        .selectAll()
        .execute();
      assert.equal(recorded.length, all.length);
    } finally {
      for (const handle of handles) await handle.close();
      await dropSchema(schema);
    }
  }
});
