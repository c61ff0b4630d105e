import pg from 'pg';
import type { Logger } from '../core/index.ts';
import { keepAliveSocket } from './pg-socket.ts';

/**
 * How often the listening connection says LISTEN again, and how long it may take to answer (or to connect). A
 * connection that only listens sends nothing, so one a NAT or firewall forgot while idle, or whose server vanished,
 * would never hear another notification and never know; saying LISTEN again (a no-op) finds out, and keeps it from
 * looking idle.
 */
const CHECK_INTERVAL_MS = 5_000;
const CHECK_TIMEOUT_MS = 10_000;

/**
 * A dedicated connection LISTENing on one channel for other processes' (and this one's) notifications. A
 * notification whose payload is `self` is skipped: that process has acted on its own news already. It reconnects
 * after a dropped connection, or one that stops answering; the caller's poll covers whatever was announced while
 * it was away.
 */
export function listenForNotifications(options: {
  url: string;
  channel: string;
  /** What the listener is for, in its log lines. */
  purpose: string;
  /** Notifications carrying this payload were sent by this process and are skipped. */
  self?: string;
  logger: Logger;
  onNotify: () => void;
  /** Told when LISTEN takes effect (at start and after each reconnect) and when the connection is lost. */
  onListening?: (listening: boolean) => void;
}) {
  let client: pg.Client | undefined;
  let closed = false;
  let retryTimer: NodeJS.Timeout | undefined;

  async function connect(): Promise<void> {
    // The name shows in pg_stat_activity.
    const next = new pg.Client({
      connectionString: options.url,
      connectionTimeoutMillis: CHECK_TIMEOUT_MS,
      stream: keepAliveSocket,
      application_name: `mailroom ${options.channel}`,
    });
    next.on('notification', (message) => {
      if (options.self === undefined || message.payload !== options.self) options.onNotify();
    });
    let gone = false;
    let check: NodeJS.Timeout | undefined;
    const lost = (error: Error) => {
      clearInterval(check);
      if (gone || closed) return;
      gone = true;
      options.logger.warn({ err: error }, `${options.purpose} connection lost`);
      next.end().catch(() => {});
      if (client === next) {
        client = undefined;
        options.onListening?.(false);
      }
      scheduleReconnect();
    };
    next.on('error', lost);
    next.on('end', () => lost(new Error('connection ended')));
    try {
      await next.connect();
      await next.query(`LISTEN "${options.channel}"`);
    } catch (error) {
      gone = true;
      next.end().catch(() => {});
      throw error;
    }
    if (closed) {
      await next.end();
      return;
    }
    client = next;
    options.onListening?.(true);
    let checking = false;
    check = setInterval(() => {
      if (checking) return;
      checking = true;
      const silent = setTimeout(() => lost(new Error('no answer to LISTEN')), CHECK_TIMEOUT_MS).unref();
      next
        .query(`LISTEN "${options.channel}"`)
        .catch(lost)
        .finally(() => {
          clearTimeout(silent);
          checking = false;
        });
    }, CHECK_INTERVAL_MS);
    check.unref();
  }

  function scheduleReconnect(): void {
    if (closed || retryTimer) return;
    retryTimer = setTimeout(() => {
      retryTimer = undefined;
      connect().catch((error) => {
        options.logger.warn({ err: error }, `${options.purpose} reconnect failed`);
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
