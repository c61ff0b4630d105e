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
    const loaded = startBackgroundThread(THREAD, 'test-thread', { loadMs: 0, stoppedFile: join(dir, 'loaded') });
    // Ready is posted once the thread listens: wait for it through the thread's own messages.
    await new Promise((resolve) => loaded.worker.once('message', resolve));
    await loaded.stop();
    assert.equal(readFileSync(join(dir, 'loaded'), 'utf8'), 'stopped');

    // Its load takes 2 s: asked to stop, it would write its file once loaded, and stop() would wait for it.
    const loading = startBackgroundThread(THREAD, 'test-thread', { loadMs: 2000, stoppedFile: join(dir, 'loading') });
    await loading.stop();
    assert.equal(existsSync(join(dir, 'loading')), false);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
