import { type Clock, FixedWindowRateLimiter, isoNow, type Logger, type RateLimitAnswer } from '../core/index.ts';
import type { Db } from '../db/index.ts';
import { appendEvents } from '../events/index.ts';
import type { WrittenEmail } from './email-writer.ts';

const HOUR_MS = 3_600_000;

export interface AccountVolumeDependencies {
  db: Db;
  clock: Clock;
  logger: Logger;
  /** ACCOUNT_MAIL_LIMIT_PER_HOUR (above 0). */
  limitPerHour: number;
  /** Called after the commit of an event, to wake this process's event streams. */
  eventsAppended(): void;
}

/**
 * Counts the emails each account is sent per hour, in this process, against ACCOUNT_MAIL_LIMIT_PER_HOUR. Mail over
 * the limit is stored and delivered like any other: the email that first goes over it in an account's hour is logged
 * as a warning and reported once, as `account.mail_limit_exceeded` on the account's event stream.
 */
export class AccountVolumeWatch {
  private readonly deps: AccountVolumeDependencies;
  private readonly limiter: FixedWindowRateLimiter;
  /** Events being written, in order; close waits for them. */
  private flagging: Promise<void> = Promise.resolve();

  constructor(deps: AccountVolumeDependencies) {
    this.deps = deps;
    this.limiter = new FixedWindowRateLimiter({ limit: deps.limitPerHour, windowMs: HOUR_MS, clock: deps.clock });
  }

  /** Counts newly stored emails (ingest's onCommitted listener). */
  count(emails: readonly WrittenEmail[]): void {
    const perAccount = new Map<string, number>();
    for (const email of emails) perAccount.set(email.accountId, (perAccount.get(email.accountId) ?? 0) + 1);
    for (const [accountId, received] of perAccount) {
      const answer = this.limiter.hit(accountId, received);
      if (!answer.crossed) continue;
      const crossedAt = isoNow(this.deps.clock);
      this.flagging = this.flagging.then(() => this.flag(accountId, answer, crossedAt));
    }
  }

  /** Resolves once every flag raised so far is written. */
  settled(): Promise<void> {
    return this.flagging;
  }

  private async flag(accountId: string, answer: RateLimitAnswer, crossedAt: string): Promise<void> {
    const data = {
      limitPerHour: this.deps.limitPerHour,
      received: answer.count,
      windowStartedAt: answer.windowStartedAt.toISOString(),
      windowEndsAt: answer.windowEndsAt.toISOString(),
    };
    this.deps.logger.warn({ accountId, ...data }, 'account mail limit exceeded');
    try {
      await this.deps.db
        .transaction()
        .execute((trx) => appendEvents(trx, [{ accountId, type: 'account.mail_limit_exceeded', data }], crossedAt));
      this.deps.eventsAppended();
    } catch (error) {
      this.deps.logger.warn({ err: error, accountId }, 'account.mail_limit_exceeded event not written');
    }
  }
}
