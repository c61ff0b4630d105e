import type { Logger } from '../core/index.ts';
import type { RetentionService } from './retention-service.ts';

/** Expires mail on a timer in the running server. stop() waits for a sweep in progress. */
export function startRetentionSweeper(retention: RetentionService, intervalMs: number, logger: Logger) {
  let running: Promise<void> | undefined;
  const sweep = () => {
    running ??= retention
      .expireDue()
      .then((expired) => {
        if (expired > 0) logger.info({ expired }, 'retention sweep');
      })
      .catch((error) => logger.error({ err: error }, 'retention sweep failed'))
      .finally(() => {
        running = undefined;
      });
  };
  const timer = setInterval(sweep, intervalMs);
  timer.unref();
  return {
    async stop() {
      clearInterval(timer);
      await running;
    },
  };
}
