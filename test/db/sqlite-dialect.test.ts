import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { sql } from 'kysely';
import { startTestApp, TEST_DATABASE_URL, type TestApp } from '../helpers/app.ts';

let server: TestApp;
before(async () => {
  server = await startTestApp();
});
after(() => server.close());

test('SQLite: a statement runs after the connection last inserted a rowid past 2^53', {
  skip: TEST_DATABASE_URL ? 'the node:sqlite dialect is SQLite-only' : false,
}, async () => {
  // FTS5's shadow tables number their blocks this high; the next statement's result carries that rowid.
  const db = server.app.database.db;
  await sql`CREATE TEMP TABLE big_rowids (x INTEGER)`.execute(db);
  await sql`INSERT INTO big_rowids (rowid, x) VALUES (9007336693694464, 1)`.execute(db);
  const deleted = await sql`DELETE FROM big_rowids WHERE x = 1`.execute(db);
  assert.equal(deleted.numAffectedRows, 1n);
});
