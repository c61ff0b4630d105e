import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { WorkerLost, WorkerPool } from '../../src/workers/index.ts';

const ECHO = new URL('../fixtures/workers/echo-worker.ts', import.meta.url);
type Request = { action: 'echo' | 'throw' | 'exit' | 'limits'; value: string };

test('requests are answered by the workers; a handler error rejects only its own request, with its name', async () => {
  const pool = new WorkerPool<Request, string>(ECHO, 2, {}, 'echo-worker', 8);
  try {
    const answers = await Promise.all(['a', 'b', 'c'].map((value) => pool.request({ action: 'echo', value })));
    assert.deepEqual(answers, ['echo a', 'echo b', 'echo c']);
    await assert.rejects(pool.request({ action: 'throw', value: 'x' }), { name: 'RefusedError', message: 'refused x' });
    assert.equal(await pool.request({ action: 'echo', value: 'd' }), 'echo d');
  } finally {
    await pool.close();
  }
});

test('a worker that dies fails its requests with WorkerLost and is replaced', async () => {
  const pool = new WorkerPool<Request, string>(ECHO, 1, {}, 'echo-worker', 8);
  try {
    const error = await pool.request({ action: 'exit', value: '' }).catch((reason: Error) => reason);
    assert.ok(error instanceof WorkerLost);
    assert.match(error.message, /echo-worker\.ts worker exited with code 3$/);
    assert.equal(await pool.request({ action: 'echo', value: 'after' }), 'echo after');
    await pool.idle();
  } finally {
    await pool.close();
  }
});

test('workers that cannot start make requests fail at once instead of respawning forever', async () => {
  const pool = new WorkerPool<Request, string>(ECHO, 1, { failAtStart: true }, 'echo-worker', 8);
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

test("the workers' threads carry the pool's thread name", async () => {
  const threadNames = () =>
    readdirSync('/proc/self/task').map((task) => readFileSync(`/proc/self/task/${task}/comm`, 'utf8').trim());
  assert.equal(threadNames().filter((name) => name === 'echo-worker').length, 0);
  const pool = new WorkerPool<Request, string>(ECHO, 2, {}, 'echo-worker', 8);
  try {
    await Promise.all(['a', 'b'].map((value) => pool.request({ action: 'echo', value })));
    assert.equal(threadNames().filter((name) => name === 'echo-worker').length, 2);
  } finally {
    await pool.close();
  }
});

test("each worker's young generation is capped at the pool's size", async () => {
  const pool = new WorkerPool<Request, string>(ECHO, 2, {}, 'echo-worker', 12);
  try {
    const answers = await Promise.all(['a', 'b'].map((value) => pool.request({ action: 'limits', value })));
    assert.deepEqual(answers, ['young generation 12 MB', 'young generation 12 MB']);
  } finally {
    await pool.close();
  }
});

test('closing asks a worker to finish, but terminates one still loading its module and never given a request', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'worker-pool-'));
  try {
    const loaded = new WorkerPool<Request, string>(ECHO, 1, { closedFile: join(dir, 'loaded') }, 'echo-worker', 8);
    assert.equal(await loaded.request({ action: 'echo', value: 'a' }), 'echo a');
    await loaded.close();
    assert.equal(readFileSync(join(dir, 'loaded'), 'utf8'), 'closed');

    // Its load takes 2 s, within the grace period: asked to finish, it would write its file once loaded.
    const loading = new WorkerPool<Request, string>(
      ECHO,
      1,
      { loadMs: 2000, closedFile: join(dir, 'loading') },
      'echo-worker',
      8,
    );
    await loading.close();
    assert.equal(existsSync(join(dir, 'loading')), false);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
