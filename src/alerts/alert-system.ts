import type { Clock, Logger } from '../core/index.ts';
import type { Db } from '../db/index.ts';
import { type AddressGuard, createHttpSender, createRetryPolicy, type HostLookup } from '../delivery/index.ts';
import { AlertChecks, type AlertSources } from './alert-checks.ts';
import { AlertNotifier } from './alert-notifier.ts';
import { AlertsService } from './alerts-service.ts';

export interface AlertSystemOptions {
  db: Db;
  clock: Clock;
  logger: Logger;
  /** What alerts learn of domains, mail, endpoints and deliveries (app.ts wires them). */
  sources: AlertSources;
  /** The address rule for each alert webhook's connection, as for deliveries. */
  guard: AddressGuard;
  dns: HostLookup;
  /** The SSRF rule for the alert endpoint (Invalid when it points at an internal address). */
  assertPublicUrl: (url: string) => Promise<void>;
  eventsAppended: () => void;
  settings: { checkIntervalMs: number; dnsCheckIntervalMs: number; retryScale: number; version: string };
}

/** The alerts service with its checks and its webhook sender; `stop()` ends the sending. */
export function createAlertSystem(options: AlertSystemOptions) {
  const { db, clock, logger, settings } = options;
  const http = createHttpSender(options.guard, options.dns);
  const notifier = new AlertNotifier({
    db,
    clock,
    http,
    policy: createRetryPolicy(settings.retryScale),
    userAgent: `Mailroom-Alerts/${settings.version}`,
    logger,
  });
  const checks = new AlertChecks({
    db,
    clock,
    sources: options.sources,
    checkIntervalMs: settings.checkIntervalMs,
    dnsCheckIntervalMs: settings.dnsCheckIntervalMs,
  });
  const service = new AlertsService({
    db,
    clock,
    checks,
    notifier,
    assertPublicUrl: options.assertPublicUrl,
    eventsAppended: options.eventsAppended,
    logger,
  });
  return {
    service,
    async stop() {
      await notifier.stop();
      http.close();
    },
  };
}
