import type { Logger } from '../core/index.ts';
import type { AlertsService } from './alerts-service.ts';

/** Runs the alert checks on a timer in the running server. stop() waits for a pass in progress. */
export function startAlertSweeper(alerts: AlertsService, intervalMs: number, logger: Logger) {
  let running: Promise<void> | undefined;
  const pass = () => {
    running ??= alerts
      .check()
      .then(({ raised, cleared }) => {
        if (raised.length + cleared.length > 0) {
          logger.info({ raised: raised.length, cleared: cleared.length }, 'alert checks');
        }
      })
      .catch((error) => logger.error({ err: error }, 'alert checks failed'))
      .finally(() => {
        running = undefined;
      });
  };
  const timer = setInterval(pass, intervalMs);
  timer.unref();
  return {
    async stop() {
      clearInterval(timer);
      await running;
    },
  };
}
