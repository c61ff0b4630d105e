import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import { cp, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { TEST_DATABASE_URL } from '../helpers/app.ts';
import { createInstallation, runCli, runScript, startServerProcess } from '../helpers/process.ts';

const ROOT = join(import.meta.dirname, '..', '..');
const FUTURE = '9999_from_a_newer_version';
const KNOWN = readdirSync(join(ROOT, 'src', 'db', 'migrations'))
  .filter((file) => /^\d{4}_/.test(file))
  .sort()
  .at(-1)!
  .replace(/\.ts$/, '');
const REFUSAL = `The database was migrated by a newer Mailroom (migration ${FUTURE}, this version knows up to ${KNOWN}): run that version or a later one\n`;

/** Records a migration this version does not know, as a newer Mailroom's start would. */
async function migrateAsNewerVersion(installation: Awaited<ReturnType<typeof createInstallation>>) {
  const insert = 'insert into mailroom_migrations (name, applied_at) values ($1, $2)';
  if (TEST_DATABASE_URL) {
    const client = new pg.Client({ connectionString: TEST_DATABASE_URL });
    await client.connect();
    await client.query(`set search_path = "${installation.env.DATABASE_SCHEMA}"`);
    await client.query(insert, [FUTURE, new Date().toISOString()]);
    await client.end();
  } else {
    const database = new DatabaseSync(join(installation.dataDir, 'mailroom.sqlite'));
    database.prepare(insert.replace('$1, $2', '?, ?')).run(FUTURE, new Date().toISOString());
    database.close();
  }
}

test('a database a newer Mailroom migrated: the server and the CLI refuse it in one line, writing nothing', async () => {
  const installation = await createInstallation();
  try {
    assert.equal((await runCli(['migrate', '--create'], installation.env)).code, 0);
    await migrateAsNewerVersion(installation);
    const server = await runScript('src/main.ts', [], installation.env, undefined, 20_000);
    assert.deepEqual([server.code, server.stderr, server.stdout], [1, REFUSAL, '']);
    const cli = await runCli(['keys', 'create', '--account', 'late'], installation.env);
    assert.deepEqual([cli.code, cli.stderr, cli.stdout], [1, REFUSAL, '']);
  } finally {
    await installation.remove();
  }
});

test('a running server stops, saying why, once a newer Mailroom migrates its database', async () => {
  const installation = await createInstallation();
  // The server runs from a copy of the code, so that the newer version can be put in place under it, as a deploy
  // that replaces the code before restarting does.
  const code = await mkdtemp(join(tmpdir(), 'mailroom-code-'));
  try {
    await cp(join(ROOT, 'src'), join(code, 'src'), { recursive: true });
    await cp(join(ROOT, 'package.json'), join(code, 'package.json'));
    await symlink(join(ROOT, 'node_modules'), join(code, 'node_modules'));
    const server = await startServerProcess(installation.env, undefined, {
      command: [relative(ROOT, join(code, 'src', 'main.ts'))],
      cwd: code,
    });
    let stderr = '';
    server.child.stderr!.on('data', (chunk) => {
      stderr += chunk;
    });
    const exited = new Promise<number | null>((resolve) => server.child.on('exit', resolve));
    await writeFile(join(code, 'src', 'db', 'migrations', `${FUTURE}.ts`), 'export async function up() {}\n');
    await migrateAsNewerVersion(installation);
    const exitCode = await Promise.race([exited, sleep(20_000).then(() => 'still running')]);
    if (exitCode === 'still running') await server.stop('SIGKILL');
    assert.deepEqual([exitCode, stderr], [1, REFUSAL]);
  } finally {
    await installation.remove();
    await rm(code, { recursive: true, force: true });
  }
});
