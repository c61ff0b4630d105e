import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { symlinkSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { TEST_DATABASE_URL } from '../helpers/app.ts';
import { apiClient } from '../helpers/http.ts';
import { createInstallation, startServerProcess } from '../helpers/process.ts';
import { startS3Server } from '../helpers/s3.ts';

const ROOT = join(import.meta.dirname, '..', '..');
/** The code before migration 0029 (which adds deliveries.queued_at), serving while the current code migrates. */
const BEFORE_0029 = 'c4f56c3';
const API_KEY = 'mr_test_migration_locks_0123456789';

test('a migration waiting for a table lock does not stop another process reading that table', {
  skip: TEST_DATABASE_URL ? false : 'needs TEST_DATABASE_URL (PostgreSQL)',
}, async () => {
  const oldCode = await mkdtemp(join(tmpdir(), 'mailroom-old-'));
  execFileSync('git', ['worktree', 'add', '--detach', oldCode, BEFORE_0029], { cwd: ROOT, stdio: 'ignore' });
  symlinkSync(join(ROOT, 'node_modules'), join(oldCode, 'node_modules'));
  const s3 = await startS3Server();
  const installation = await createInstallation({ MAILROOM_API_KEY: API_KEY, ...s3.env });
  const newDataDir = await mkdtemp(join(tmpdir(), 'mailroom-new-'));
  const reader = new pg.Client({ connectionString: TEST_DATABASE_URL });
  try {
    const old = await startServerProcess(installation.env, 30_000, {
      command: [relative(ROOT, join(oldCode, 'src', 'main.ts'))],
      cwd: oldCode,
    });
    // A long transaction that read deliveries, as a report or pg_dump would hold one.
    await reader.connect();
    await reader.query(`set search_path = "${installation.env.DATABASE_SCHEMA}"`);
    await reader.query('begin');
    await reader.query('select count(*) from deliveries');
    const upgraded = startServerProcess({ ...installation.env, DATA_DIR: newDataDir }, 30_000);
    await sleep(3_000);

    const listing = apiClient(old.httpUrl, API_KEY).get('/api/v2/deliveries');
    const answered = await Promise.race([listing.then((listed) => listed.status), sleep(3_000).then(() => 'waiting')]);
    await reader.query('commit');
    await listing;
    const fresh = await upgraded;
    assert.equal(answered, 200, "the old process's read waited behind the migration");
    const after = await apiClient(fresh.httpUrl, API_KEY).get('/api/v2/deliveries');
    assert.equal(after.status, 200);
    await fresh.stop();
    await old.stop();
  } finally {
    await reader.end().catch(() => {});
    await installation.remove();
    await rm(newDataDir, { recursive: true, force: true });
    await s3.close();
    execFileSync('git', ['worktree', 'remove', '--force', oldCode], { cwd: ROOT, stdio: 'ignore' });
  }
});
