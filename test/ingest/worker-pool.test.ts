import assert from 'node:assert/strict';
import { test } from 'node:test';
import { WorkerPool } from '../../src/ingest/worker-pool.ts';

const ECHO = new URL('../fixtures/workers/echo-worker.ts', import.meta.url);
type Request = { action: 'echo' | 'throw' | 'exit'; value: string };

test('requests are answered by the workers; a handler error rejects only its own request', async () => {
  const pool = new WorkerPool<Request, string>(ECHO, 2, {});
  try {
    const answers = await Promise.all(['a', 'b', 'c'].map((value) => pool.request({ action: 'echo', value })));
    assert.deepEqual(answers, ['echo a', 'echo b', 'echo c']);
    await assert.rejects(pool.request({ action: 'throw', value: 'x' }), { message: 'refused x' });
    assert.equal(await pool.request({ action: 'echo', value: 'd' }), 'echo d');
  } finally {
    await pool.close();
  }
});

test('a worker that dies fails its requests and is replaced', async () => {
  const pool = new WorkerPool<Request, string>(ECHO, 1, {});
  try {
    await assert.rejects(pool.request({ action: 'exit', value: '' }), /worker exited with code 3/);
    assert.equal(await pool.request({ action: 'echo', value: 'after' }), 'echo after');
    await pool.idle();
  } finally {
    await pool.close();
  }
});

test('workers that cannot start make requests fail at once instead of respawning forever', async () => {
  const pool = new WorkerPool<Request, string>(ECHO, 1, { failAtStart: true });
  try {
    // Each failed start is replaced until the pool gives up; from then on a request fails without waiting.
    for (let attempt = 0; attempt < 20; attempt++) {
      const error = await pool.request({ action: 'echo', value: 'x' }).catch((reason: Error) => reason);
      assert.ok(error instanceof Error);
      if (error.message.startsWith('worker keeps failing')) break;
    }
    await assert.rejects(pool.request({ action: 'echo', value: 'y' }), /^Error: worker keeps failing: cannot start/);
  } finally {
    await pool.close();
  }
});
