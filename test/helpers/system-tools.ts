import { execFileSync } from 'node:child_process';

/** Whether prlimit (util-linux), which changes a running process's limit of open files, is installed. */
export const hasPrlimit = (() => {
  try {
    execFileSync('prlimit', ['--version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
})();
