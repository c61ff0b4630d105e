import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { TEST_DATABASE_URL } from '../helpers/app.ts';
import { apiClient } from '../helpers/http.ts';
import { checkOutOldCode, hasCommit } from '../helpers/old-code.ts';
import { createInstallation, type ServerProcess, startServerProcess } from '../helpers/process.ts';
import { startS3Server } from '../helpers/s3.ts';

/** The code before migration 0029 (which adds deliveries.queued_at), serving while the current code migrates. */
const BEFORE_0029 = 'c4f56c3';
const API_KEY = 'mr_test_migration_locks_0123456789';

test('a migration waiting for a table lock does not stop another process reading that table', {
  skip: !TEST_DATABASE_URL
    ? 'needs TEST_DATABASE_URL (PostgreSQL)'
    : !hasCommit(BEFORE_0029) && `needs git history back to ${BEFORE_0029}`,
}, async () => {
  const oldCode = await checkOutOldCode(BEFORE_0029);
  const s3 = await startS3Server();
  const installation = await createInstallation({ MAILROOM_API_KEY: API_KEY, ...s3.env });
  const newDataDir = await mkdtemp(join(tmpdir(), 'mailroom-new-'));
  const reader = new pg.Client({ connectionString: TEST_DATABASE_URL });
  const servers: ServerProcess[] = [];
  try {
    const old = await startServerProcess(installation.env, 30_000, { command: oldCode.command, cwd: oldCode.dir });
    servers.push(old);
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
    servers.push(fresh);
    assert.equal(answered, 200, "the old process's read waited behind the migration");
    const after = await apiClient(fresh.httpUrl, API_KEY).get('/api/v2/deliveries');
    assert.equal(after.status, 200);
  } finally {
    for (const server of servers) await server.stop('SIGKILL');
    await reader.end().catch(() => {});
    await installation.remove();
    await rm(newDataDir, { recursive: true, force: true });
    await s3.close();
    oldCode.remove();
  }
});
