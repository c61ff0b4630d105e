import type { Logger } from './logger.ts';
import { isOutage } from './outage.ts';

/**
 * Runs `pass` every `intervalMs` in the running server, never two at once; a failed pass is logged as
 * `<name> failed` (a warning when a store is out of reach: the next pass tries again). `first`, when given, runs at
 * once, as a pass. stop() aborts the signal passes are given, for a long pass to end at its next step, and waits for
 * the pass in progress.
 */
export function startPeriodicTask(
  name: string,
  pass: (signal: AbortSignal) => Promise<void>,
  intervalMs: number,
  logger: Logger,
  first?: (signal: AbortSignal) => Promise<void>,
) {
  let running: Promise<void> | undefined;
  const stopping = new AbortController();
  const run = (task: (signal: AbortSignal) => Promise<void>) => {
    running ??= task(stopping.signal)
      .catch((error) => logger[isOutage(error) ? 'warn' : 'error']({ err: error }, `${name} failed`))
      .finally(() => {
        running = undefined;
      });
  };
  const tick = () => run(pass);
  if (first) run(first);
  const timer = setInterval(tick, intervalMs);
  timer.unref();
  return {
    async stop() {
      clearInterval(timer);
      stopping.abort();
      await running;
    },
  };
}
