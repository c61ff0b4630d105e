import type { Logger } from './logger.ts';
import { isOutage } from './outage.ts';

/**
 * Runs `pass` every `intervalMs` in the running server, never two at once; a failed pass is logged as
 * `<name> failed` (a warning when a store is out of reach: the next pass tries again). `first`, when given, runs at
 * once, as a pass. stop() waits for a pass in progress.
 */
export function startPeriodicTask(
  name: string,
  pass: () => Promise<void>,
  intervalMs: number,
  logger: Logger,
  first?: () => Promise<void>,
) {
  let running: Promise<void> | undefined;
  const run = (task: () => Promise<void>) => {
    running ??= task()
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
      await running;
    },
  };
}
