import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { createInstallation, startServerProcess } from '../helpers/process.ts';

const ROOT = join(import.meta.dirname, '..', '..');

/** The command line and MALLOC_ARENA_MAX of the process with this pid, as the kernel has them now. */
function processSettings(pid: number) {
  const args = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').slice(1, -1);
  const environment = readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0');
  const arenas = environment.find((entry) => entry.startsWith('MALLOC_ARENA_MAX='));
  return { args, arenas };
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

test('npm start: the server runs in the started pid with an 8 MB semi-space and two malloc arenas', async () => {
  assert.deepEqual(await settingsOfStarted({}), {
    args: ['--max-semi-space-size=8', join(ROOT, 'src/main.ts')],
    arenas: 'MALLOC_ARENA_MAX=2',
  });
});

test('mailroom serve: the same settings as npm start', async () => {
  assert.deepEqual(await settingsOfStarted({}, ['bin/mailroom.mjs', 'serve']), {
    args: ['--max-semi-space-size=8', join(ROOT, 'bin/mailroom.mjs'), 'serve'],
    arenas: 'MALLOC_ARENA_MAX=2',
  });
});

test("npm start: the operator's own semi-space (NODE_OPTIONS) and arena count are kept", async () => {
  const settings = await settingsOfStarted({ NODE_OPTIONS: '--max-semi-space-size=16', MALLOC_ARENA_MAX: '4' });
  assert.deepEqual(settings, { args: [join(ROOT, 'src/main.ts')], arenas: 'MALLOC_ARENA_MAX=4' });
});

test('npm start: an operator who sets only the arena count still gets the semi-space', async () => {
  assert.deepEqual(await settingsOfStarted({ MALLOC_ARENA_MAX: '1' }), {
    args: ['--max-semi-space-size=8', join(ROOT, 'src/main.ts')],
    arenas: 'MALLOC_ARENA_MAX=1',
  });
});
