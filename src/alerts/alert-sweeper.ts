import { type Logger, startPeriodicTask } from '../core/index.ts';
import type { AlertsService } from './alerts-service.ts';

/** Runs the alert checks on a timer in the running server. stop() waits for a pass in progress. */
export function startAlertSweeper(alerts: AlertsService, intervalMs: number, logger: Logger) {
  return startPeriodicTask(
    'alert checks',
    async () => {
      const { raised, cleared } = await alerts.check();
      if (raised.length + cleared.length > 0)
        logger.info({ raised: raised.length, cleared: cleared.length }, 'alert checks');
    },
    intervalMs,
    logger,
  );
}
