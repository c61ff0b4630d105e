import { type Clock, type Logger, randomHex } from '../core/index.ts';
import { announceCommits, type Db, listenForNotifications } from '../db/index.ts';
import {
  type Cursor,
  currentCursor,
  EVENT_PAGE_SIZE,
  parsePosition,
  pruneEvents,
  readEvents,
  type StreamedEvent,
} from './event-log.ts';

/** How often the log is read without a wake-up: what another process's events wait at most if a NOTIFY is lost. */
const POLL_MS = 1000;
/** How soon to read again while committed events wait for an older transaction to end (PostgreSQL). */
const HELD_BACK_RETRY_MS = 20;
const PRUNE_INTERVAL_MS = 3600 * 1000;

export interface EventSubscription {
  close(): void;
}

interface Subscriber {
  accountId: string;
  cursor: Cursor;
  send(events: StreamedEvent[]): void;
  closed: boolean;
}

export interface EventHubOptions {
  db: Db;
  clock: Clock;
  logger: Logger;
  /** PostgreSQL: announce this process's events to the others, and LISTEN for theirs, on this installation's channel. */
  postgres?: { url: string; schema: string };
}

/**
 * The process's one reader of the event log, shared by every open stream: it reads once per account and position
 * (streams of an account that are caught up share one read) and hands each stream its events in order. It reads when
 * woken (appended() after a commit in this process; NOTIFY from others on PostgreSQL), on a slow poll, and prunes old
 * events on a timer.
 */
export class EventHub {
  private readonly options: EventHubOptions;
  private readonly subscribers = new Set<Subscriber>();
  private reading: Promise<void> | undefined;
  private readAgain = false;
  private wakeTimer: NodeJS.Timeout | undefined;
  private pollTimer: NodeJS.Timeout | undefined;
  private pruneTimer: NodeJS.Timeout | undefined;
  private pruning: Promise<unknown> | undefined;
  private listener: ReturnType<typeof listenForNotifications> | undefined;
  private announcer: ReturnType<typeof announceCommits> | undefined;
  private stopped = false;

  constructor(options: EventHubOptions) {
    this.options = options;
  }

  async start(): Promise<void> {
    const { postgres, logger } = this.options;
    if (postgres) {
      const channel = `mailroom_events_${postgres.schema}`;
      const self = randomHex(8);
      const purpose = 'event stream wake-up';
      this.announcer = announceCommits({ db: this.options.db, channel, self, purpose, logger });
      this.listener = listenForNotifications({
        url: postgres.url,
        channel,
        self,
        purpose,
        logger,
        onNotify: () => this.notify(),
      });
      await this.listener.ready;
    }
    this.pollTimer = setInterval(() => this.notify(), POLL_MS);
    this.pollTimer.unref();
    const prune = () => {
      this.pruning ??= pruneEvents(this.options.db, this.options.clock.now())
        .catch((error) => logger.warn({ err: error }, 'event pruning failed'))
        .finally(() => {
          this.pruning = undefined;
        });
    };
    prune();
    this.pruneTimer = setInterval(prune, PRUNE_INTERVAL_MS);
    this.pruneTimer.unref();
  }

  /** This process has committed events: its streams read them soon, and other processes' streams are told. */
  appended(): void {
    this.notify();
    this.announcer?.announce();
  }

  /** New events may have been committed: read the log soon (calls in the same tick share one read). */
  private notify(): void {
    if (this.stopped || this.subscribers.size === 0 || this.wakeTimer) return;
    if (this.reading) {
      this.readAgain = true;
      return;
    }
    this.wakeTimer = setTimeout(() => {
      this.wakeTimer = undefined;
      this.reading = this.read()
        .catch((error) => this.options.logger.warn({ err: error }, 'event stream read failed'))
        .finally(() => {
          this.reading = undefined;
          if (this.readAgain) {
            this.readAgain = false;
            this.notify();
          }
        });
    });
  }

  /**
   * Streams the account's events to `send`, in order, from after `lastEventId` (a position this hub sent), or from
   * now without one. Throws Invalid for a Last-Event-ID that is not a position.
   */
  async subscribe(
    accountId: string,
    lastEventId: string | undefined,
    send: (events: StreamedEvent[]) => void,
  ): Promise<EventSubscription> {
    const { db } = this.options;
    const cursor = lastEventId === undefined ? await currentCursor(db) : parsePosition(db, lastEventId);
    const subscriber: Subscriber = { accountId, cursor, send, closed: false };
    this.subscribers.add(subscriber);
    if (lastEventId !== undefined) this.notify();
    return {
      close: () => {
        subscriber.closed = true;
        this.subscribers.delete(subscriber);
      },
    };
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.wakeTimer);
    clearInterval(this.pollTimer);
    clearInterval(this.pruneTimer);
    this.subscribers.clear();
    this.announcer?.close();
    await this.listener?.close();
    await this.reading;
    await this.pruning;
  }

  /** One read per account and position among the open streams; each stream gets what follows its position. */
  private async read(): Promise<void> {
    const groups = new Map<string, Subscriber[]>();
    for (const subscriber of this.subscribers) {
      const { accountId, cursor } = subscriber;
      const key = `${accountId} ${cursor.txid} ${cursor.id}`;
      groups.set(key, [...(groups.get(key) ?? []), subscriber]);
    }
    let heldBack = false;
    for (const group of groups.values()) {
      const { accountId, cursor } = group[0]!;
      // A group whose read fails (a bad row, a dropped connection) is tried again at the next pass; the other
      // groups are still served, so no one stream can hold back everybody else's.
      const page = await readEvents(this.options.db, accountId, cursor).catch((error) => {
        this.options.logger.warn({ err: error, accountId }, 'event stream read failed');
      });
      if (!page) continue;
      for (const subscriber of group) {
        if (subscriber.closed) continue;
        subscriber.cursor = page.last;
        if (page.events.length > 0) subscriber.send(page.events);
      }
      if (page.events.length === EVENT_PAGE_SIZE) this.readAgain = true;
      heldBack ||= page.heldBack;
    }
    if (heldBack && !this.readAgain) setTimeout(() => this.notify(), HELD_BACK_RETRY_MS).unref();
  }
}
