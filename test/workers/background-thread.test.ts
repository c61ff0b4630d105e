import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { startBackgroundThread } from '../../src/workers/index.ts';

const THREAD = new URL('../fixtures/workers/background-thread.ts', import.meta.url);

test('stop asks a loaded background thread to finish, and terminates one still loading', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'background-thread-'));
  try {
    // The thread reports once it listens, after its ready signal, which is not a report.
    const reports: unknown[] = [];
    const reported = Promise.withResolvers<void>();
    const loaded = startBackgroundThread(
      THREAD,
      'test-thread',
      { loadMs: 0, stoppedFile: join(dir, 'loaded'), report: 'indexed' },
      (report) => {
        reports.push(report);
        reported.resolve();
      },
    );
    await reported.promise;
    await loaded.stop();
    assert.deepEqual(reports, [{ report: 'indexed' }]);
    assert.equal(readFileSync(join(dir, 'loaded'), 'utf8'), 'stopped');

    // Its load takes 2 s: asked to stop, it would write its file once loaded, and stop() would wait for it.
    const loading = startBackgroundThread(THREAD, 'test-thread', { loadMs: 2000, stoppedFile: join(dir, 'loading') });
    await loading.stop();
    assert.equal(existsSync(join(dir, 'loading')), false);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
