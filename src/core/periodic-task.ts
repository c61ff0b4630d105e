import type { Logger } from './logger.ts';

/**
 * Runs `pass` every `intervalMs` in the running server, never two at once; a failed pass is logged as
 * `<name> failed`. stop() waits for a pass in progress.
 */
export function startPeriodicTask(name: string, pass: () => Promise<void>, intervalMs: number, logger: Logger) {
  let running: Promise<void> | undefined;
  const tick = () => {
    running ??= pass()
      .catch((error) => logger.error({ err: error }, `${name} failed`))
      .finally(() => {
        running = undefined;
      });
  };
  const timer = setInterval(tick, intervalMs);
  timer.unref();
  return {
    async stop() {
      clearInterval(timer);
      await running;
    },
  };
}
