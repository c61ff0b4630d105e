import assert from 'node:assert/strict';
import { test } from 'node:test';
import { setTimeout as delay } from 'node:timers/promises';
import { startTestApp, TEST_DATABASE_URL } from '../helpers/app.ts';

const skip = TEST_DATABASE_URL ? false : 'needs TEST_DATABASE_URL (PostgreSQL): one SQLite process has one clock';

/** The warnings a server logs within its first 5 s, with its clock `offsetMs` off the machine's. */
async function warningsWithin5s(offsetMs: number): Promise<string[]> {
  const warnings: string[] = [];
  const clock = { now: () => new Date(Date.now() + offsetMs) };
  const server = await startTestApp({ DNS_SERVERS: '127.0.0.1:9' }, { clock, warnings });
  try {
    for (let waited = 0; waited < 5_000 && warnings.length === 0; waited += 50) await delay(50);
  } finally {
    await server.close();
  }
  return warnings;
}

test('a process whose clock is off PostgreSQL’s by more than a second says so at start, ahead or behind', {
  skip,
}, async () => {
  const advice =
    "PostgreSQL's: deliveries' leases and retry times compare the clocks of every process, so synchronize them (NTP)";
  assert.deepEqual(await warningsWithin5s(120_000), [`this process's clock is 120.0 s ahead of ${advice}`]);
  assert.deepEqual(await warningsWithin5s(-45_000), [`this process's clock is 45.0 s behind ${advice}`]);
});

test('a process on the same clock as PostgreSQL says nothing', { skip }, async () => {
  assert.deepEqual(await warningsWithin5s(0), []);
});
