import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { createInstallation, startServerProcess } from '../helpers/process.ts';

const ROOT = join(import.meta.dirname, '..', '..');

/** The server's compile cache where the operator sets none: beside the code, not in a folder other users share. */
const DEFAULT_COMPILE_CACHE = `NODE_COMPILE_CACHE=${join(ROOT, 'node_modules/.cache/node-compile-cache')}`;

/** The command line, MALLOC_ARENA_MAX and NODE_COMPILE_CACHE of the process with this pid, as the kernel has them. */
function processSettings(pid: number) {
  const args = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').slice(1, -1);
  const environment = readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0');
  const arenas = environment.find((entry) => entry.startsWith('MALLOC_ARENA_MAX='));
  const compileCache = environment.find((entry) => entry.startsWith('NODE_COMPILE_CACHE='));
  return { args, arenas, compileCache };
}

async function settingsOfStarted(extra: Record<string, string>, command?: string[]) {
  const installation = await createInstallation(extra);
  try {
    const started = await startServerProcess(installation.env, 20_000, command ? { command } : {});
    const settings = processSettings(started.child.pid!);
    assert.equal(await started.stop(), 0);
    return settings;
  } finally {
    await installation.remove();
  }
}

test('npm start: the server runs in the started pid with an 8 MB semi-space, two malloc arenas and a compile cache', async () => {
  assert.deepEqual(await settingsOfStarted({}), {
    args: ['--max-semi-space-size=8', join(ROOT, 'src/main.ts')],
    arenas: 'MALLOC_ARENA_MAX=2',
    compileCache: DEFAULT_COMPILE_CACHE,
  });
});

test('mailroom serve: the same settings as npm start', async () => {
  assert.deepEqual(await settingsOfStarted({}, ['bin/mailroom.mjs', 'serve']), {
    args: ['--max-semi-space-size=8', join(ROOT, 'bin/mailroom.mjs'), 'serve'],
    arenas: 'MALLOC_ARENA_MAX=2',
    compileCache: DEFAULT_COMPILE_CACHE,
  });
});

test("npm start: the operator's own semi-space (NODE_OPTIONS), arena count and compile cache are kept", async () => {
  const cache = await mkdtemp(join(tmpdir(), 'mailroom-compile-cache-'));
  try {
    const settings = await settingsOfStarted({
      NODE_OPTIONS: '--max-semi-space-size=16',
      MALLOC_ARENA_MAX: '4',
      NODE_COMPILE_CACHE: cache,
    });
    assert.deepEqual(settings, {
      args: [join(ROOT, 'src/main.ts')],
      arenas: 'MALLOC_ARENA_MAX=4',
      compileCache: `NODE_COMPILE_CACHE=${cache}`,
    });
  } finally {
    await rm(cache, { recursive: true, force: true });
  }
});

test('npm start: an operator who sets only the arena count still gets the semi-space', async () => {
  assert.deepEqual(await settingsOfStarted({ MALLOC_ARENA_MAX: '1' }), {
    args: ['--max-semi-space-size=8', join(ROOT, 'src/main.ts')],
    arenas: 'MALLOC_ARENA_MAX=1',
    compileCache: DEFAULT_COMPILE_CACHE,
  });
});
