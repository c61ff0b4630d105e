import { type Logger, startPeriodicTask } from '../core/index.ts';
import type { RetentionService } from './retention-service.ts';

/**
 * Expires mail on a timer in the running server. At start it deletes the blobs of mail already deleted that are still
 * queued (a crash or a store outage came between), rather than a whole interval later. stop() waits for the batch
 * in progress.
 */
export function startRetentionSweeper(retention: RetentionService, intervalMs: number, logger: Logger) {
  return startPeriodicTask(
    'retention sweep',
    async (signal) => {
      const expired = await retention.expireDue(signal);
      if (expired > 0) logger.info({ expired }, 'retention sweep');
    },
    intervalMs,
    logger,
    async () => {
      const deleted = await retention.deleteQueuedBlobs();
      if (deleted > 0) logger.info({ deleted }, 'queued blob deletions finished');
    },
  );
}
