import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { test } from 'node:test';
import pg from 'pg';
import { TEST_DATABASE_URL } from '../helpers/app.ts';
import { createInstallation, runScript } from '../helpers/process.ts';

test('a database a newer Mailroom migrated: the server and the CLI refuse it in one line, writing nothing', async () => {
  const installation = await createInstallation();
  try {
    assert.equal((await runScript('src/cli.ts', ['migrate', '--create'], installation.env)).code, 0);
    const future = '9999_from_a_newer_version';
    const insert = 'insert into mailroom_migrations (name, applied_at) values ($1, $2)';
    if (TEST_DATABASE_URL) {
      const client = new pg.Client({ connectionString: TEST_DATABASE_URL });
      await client.connect();
      await client.query(`set search_path = "${installation.env.DATABASE_SCHEMA}"`);
      await client.query(insert, [future, new Date().toISOString()]);
      await client.end();
    } else {
      const database = new DatabaseSync(join(installation.dataDir, 'mailroom.sqlite'));
      database.prepare(insert.replace('$1, $2', '?, ?')).run(future, new Date().toISOString());
      database.close();
    }
    const known = readdirSync(join(import.meta.dirname, '..', '..', 'src', 'db', 'migrations'))
      .filter((file) => /^\d{4}_/.test(file))
      .sort()
      .at(-1)!
      .replace(/\.ts$/, '');
    const refusal = `The database was migrated by a newer Mailroom (migration ${future}, this version knows up to ${known}): run that version or a later one\n`;

    const server = await runScript('src/main.ts', [], installation.env, undefined, 20_000);
    assert.deepEqual([server.code, server.stderr, server.stdout], [1, refusal, '']);
    const cli = await runScript('src/cli.ts', ['keys', 'create', '--account', 'late'], installation.env);
    assert.deepEqual([cli.code, cli.stderr, cli.stdout], [1, refusal, '']);
  } finally {
    await installation.remove();
  }
});
