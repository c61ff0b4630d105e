import { type Kysely, sql } from 'kysely';
import pg from 'pg';
import type { Logger } from '../core/index.ts';
import { keepAliveSocket } from './pg-socket.ts';
import type { Database } from './schema.ts';

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

/**
 * The fewest milliseconds between two announcements on one channel. PostgreSQL commits notifying transactions one at
 * a time, server-wide and with their WAL flush, so one NOTIFY per commit held every other commit back (see
 * docs/performance.md); listeners only need to hear that something changed since they last read.
 */
const ANNOUNCE_INTERVAL_MS = 50;

/**
 * Tells the processes LISTENing on `channel` that this one has committed something they read, with `self` as the
 * payload (see listenForNotifications). `announce()` after each such commit: a NOTIFY follows every commit announced,
 * the first at once and the rest sharing one per ANNOUNCE_INTERVAL_MS.
 */
export function announceCommits(options: {
  db: Kysely<Database>;
  channel: string;
  self: string;
  /** What the announcements are for, in their log lines. */
  purpose: string;
  logger: Logger;
}) {
  let timer: NodeJS.Timeout | undefined;
  let sending = false;
  let again = false;
  let closed = false;
  let lastSentAt = Number.NEGATIVE_INFINITY;

  function schedule(): void {
    timer = setTimeout(send, Math.max(0, lastSentAt + ANNOUNCE_INTERVAL_MS - performance.now()));
  }

  function send(): void {
    timer = undefined;
    sending = true;
    lastSentAt = performance.now();
    sql`select pg_notify(${options.channel}, ${options.self})`
      .execute(options.db)
      .catch((error) => options.logger.warn({ err: error }, `${options.purpose} NOTIFY failed`))
      .finally(() => {
        sending = false;
        if (again && !closed) {
          again = false;
          schedule();
        }
      });
  }

  return {
    announce(): void {
      // A NOTIFY already sent may have left before this commit; one scheduled has not.
      if (closed || timer) return;
      if (sending) again = true;
      else schedule();
    },
    close(): void {
      closed = true;
      clearTimeout(timer);
      timer = undefined;
    },
  };
}
