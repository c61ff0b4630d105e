import type { Logger } from '../core/index.ts';
import type { DomainsService } from './domains-service.ts';

/** Re-checks pending domains on a timer in the running server. stop() waits for a pass in progress. */
export function startDomainVerifier(domains: DomainsService, intervalMs: number, logger: Logger) {
  let running: Promise<void> | undefined;
  const pass = () => {
    running ??= domains
      .verifyPending()
      .then((result) => {
        if (result.checked > 0) logger.info(result, 'domain verification pass');
      })
      .catch((error) => logger.error({ err: error }, 'domain verification pass failed'))
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
