import { type Logger, startPeriodicTask } from '../core/index.ts';
import type { DomainsService } from './domains-service.ts';

/** Re-checks pending domains on a timer in the running server. stop() waits for the domain being checked. */
export function startDomainVerifier(domains: DomainsService, intervalMs: number, logger: Logger) {
  return startPeriodicTask(
    'domain verification pass',
    async (signal) => {
      const result = await domains.verifyPending(signal);
      if (result.checked > 0) logger.info(result, 'domain verification pass');
    },
    intervalMs,
    logger,
  );
}
