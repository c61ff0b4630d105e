import { fileURLToPath } from 'node:url';

/**
 * Settings a Mailroom server process needs from its very start, which neither code nor config can change later:
 * V8 sizes the event loop's young generation when the process starts, glibc reads its malloc arena count then, and
 * Node reads where to keep compiled modules (for every thread, which `module.enableCompileCache` does not reach).
 * Each is what the operator set, in NODE_OPTIONS, the node command line or the environment, or else ours.
 */
const YOUNG_GENERATION_FLAG = '--max-semi-space-size';
/** MB per semi-space. V8 sizes it from the machine's memory (32 at 24 GiB); dead socket reads are freed as it is. */
const SEMI_SPACE_MB = 8;
/** glibc's default, an arena per thread that allocates (worker threads, libuv's pool), keeps a high water in each. */
const MALLOC_ARENAS = 2;
/**
 * Compiled modules keyed by their source, so a start loads them without compiling. Beside the code they are compiled
 * from, writable by whoever can change that code: in a shared temporary folder another user could plant code.
 */
const COMPILE_CACHE_DIR = fileURLToPath(new URL('../node_modules/.cache/node-compile-cache', import.meta.url));

/**
 * Replaces this process (same pid, same stdio) with one that runs the same command with the settings it lacks.
 * The entries (src/main.ts, the mailroom bin) call it before loading anything else; without `process.execve`
 * (Windows) the process goes on as it is.
 */
export function relaunchWithProcessSettings(): void {
  const nodeOptions = (process.env.NODE_OPTIONS ?? '').split(/\s+/);
  const hasYoungGeneration = [...process.execArgv, ...nodeOptions].some((arg) => arg.startsWith(YOUNG_GENERATION_FLAG));
  const missingEnv = {
    ...(process.env.MALLOC_ARENA_MAX === undefined ? { MALLOC_ARENA_MAX: String(MALLOC_ARENAS) } : {}),
    ...(process.env.NODE_COMPILE_CACHE === undefined ? { NODE_COMPILE_CACHE: COMPILE_CACHE_DIR } : {}),
  };
  if ((hasYoungGeneration && Object.keys(missingEnv).length === 0) || typeof process.execve !== 'function') return;
  const execArgv = hasYoungGeneration
    ? process.execArgv
    : [`${YOUNG_GENERATION_FLAG}=${SEMI_SPACE_MB}`, ...process.execArgv];
  const env = { ...process.env, ...missingEnv };
  process.execve(process.execPath, [process.execPath, ...execArgv, ...process.argv.slice(1)], env);
}
