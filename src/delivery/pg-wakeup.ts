import pg from 'pg';
import type { Logger } from '../core/index.ts';

/** The NOTIFY channel of one Mailroom installation (one schema) on a PostgreSQL server. */
export function wakeupChannel(schema: string | undefined): string {
  return `mailroom_deliveries_${schema ?? 'public'}`;
}

/**
 * A dedicated connection LISTENing for "jobs queued" from other processes. Each notification carries the sender's
 * worker id, so a process ignores its own (it has woken its worker already). It reconnects after a dropped
 * connection; the worker's poll covers whatever was announced while it was away.
 */
export function listenForWakeups(options: {
  url: string;
  channel: string;
  /** This process's worker id: notifications it sent itself are skipped. */
  self: string;
  logger: Logger;
  onWake: () => void;
}) {
  let client: pg.Client | undefined;
  let closed = false;
  let retryTimer: NodeJS.Timeout | undefined;

  async function connect(): Promise<void> {
    const next = new pg.Client({ connectionString: options.url });
    next.on('notification', (message) => {
      if (message.payload !== options.self) options.onWake();
    });
    next.on('error', (error) => {
      options.logger.warn({ err: error }, 'delivery wake-up connection lost');
      next.end().catch(() => {});
      if (client === next) client = undefined;
      scheduleReconnect();
    });
    try {
      await next.connect();
      await next.query(`LISTEN "${options.channel}"`);
    } catch (error) {
      next.end().catch(() => {});
      throw error;
    }
    if (closed) {
      await next.end();
      return;
    }
    client = next;
  }

  function scheduleReconnect(): void {
    if (closed || retryTimer) return;
    retryTimer = setTimeout(() => {
      retryTimer = undefined;
      connect().catch((error) => {
        options.logger.warn({ err: error }, 'delivery wake-up reconnect failed');
        scheduleReconnect();
      });
    }, 1000);
    retryTimer.unref();
  }

  return {
    ready: connect(),
    async close(): Promise<void> {
      closed = true;
      clearTimeout(retryTimer);
      await client?.end().catch(() => {});
    },
  };
}
