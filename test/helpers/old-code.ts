import { execFileSync } from 'node:child_process';
import { symlinkSync } from 'node:fs';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';

const ROOT = join(import.meta.dirname, '..', '..');

/** Whether this clone has `commit` (a shallow one may not): tests of an upgrade from it skip otherwise. */
export function hasCommit(commit: string): boolean {
  try {
    execFileSync('git', ['cat-file', '-e', `${commit}^{commit}`], { cwd: ROOT, stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

/**
 * An older Mailroom: this repository's code at `commit` in a temporary worktree, with this one's node_modules.
 * `command` is for startServerProcess's `command` option, with `cwd: dir`.
 */
export async function checkOutOldCode(commit: string) {
  const dir = await mkdtemp(join(tmpdir(), 'mailroom-old-'));
  execFileSync('git', ['worktree', 'add', '--detach', dir, commit], { cwd: ROOT, stdio: 'ignore' });
  symlinkSync(join(ROOT, 'node_modules'), join(dir, 'node_modules'));
  return {
    dir,
    command: [relative(ROOT, join(dir, 'src', 'main.ts'))],
    remove() {
      execFileSync('git', ['worktree', 'remove', '--force', dir], { cwd: ROOT, stdio: 'ignore' });
    },
  };
}
