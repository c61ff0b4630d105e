import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { preparedQuery } from '../../src/db/index.ts';
import { startTestApp, type TestApp } from '../helpers/app.ts';

let server: TestApp;
before(async () => {
  server = await startTestApp();
});
after(() => server.close());

const accountsByName = preparedQuery((db, { names }: { names: string[] }) =>
  db.selectFrom('accounts').select('name').where('name', 'in', names).orderBy('name'),
);

test('a prepared query runs with new values each time, and with lists of any length', async () => {
  const db = server.app.database.db;
  await server.newAccountKey('alpha');
  await server.newAccountKey('beta');
  await server.newAccountKey('gamma');
  const names = async (list: string[]) => (await accountsByName(db, { names: list })).map((row) => row.name);
  assert.deepEqual(await names(['alpha']), ['alpha']);
  assert.deepEqual(await names(['gamma', 'alpha', 'nobody']), ['alpha', 'gamma']);
  assert.deepEqual(await names(['beta']), ['beta']);
  assert.deepEqual(await names(['beta', 'gamma']), ['beta', 'gamma']);
});

test('a query that does not pass a value as a parameter is refused when it is compiled', async () => {
  const misused = preparedQuery((db, { name }: { name: string }) =>
    db
      .selectFrom('accounts')
      .select('name')
      .where('name', '=', 'alpha')
      .$if(name.length > 0, (query) => query),
  );
  await assert.rejects(misused(server.app.database.db, { name: 'alpha' }), {
    message: 'prepared query does not use name as parameters',
  });
});
