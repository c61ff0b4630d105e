import type { Expression, ExpressionBuilder, SqlBool } from 'kysely';
import { type Clock, Invalid, isoNow, NotFound } from '../core/index.ts';
import { type Database, type Db, fromFlag, onPostgres, toFlag } from '../db/index.ts';
import type { MailEraser } from './mail-eraser.ts';

/** The longest period accepted: a hundred years. */
const MAX_RETENTION_DAYS = 36_500;
/** Emails deleted per transaction, so a sweep never holds locks for long. */
const EXPIRY_BATCH = 100;
const DAY_MS = 86_400_000;

export interface AccountRetention {
  /** Days mail is kept; null keeps it forever. */
  retentionDays: number | null;
}

/** A domain's or an address's own retention: null defers to the next level up. */
export interface ScopedRetention extends AccountRetention {
  id: string;
  /** Its mail does not expire while set. */
  legalHold: boolean;
}

export interface RetentionChange {
  retentionDays?: number | null;
  legalHold?: boolean;
}

type EmailsBuilder = ExpressionBuilder<Database, 'emails'>;

/** Ids of the account's domains or addresses that decide their own mail's fate (a period or a hold of their own). */
const decidingOwn = (table: 'domains' | 'email_addresses', accountId: string) => (eb: EmailsBuilder) =>
  eb
    .selectFrom(table)
    .select(`${table}.id`)
    .where(`${table}.account_id`, '=', accountId)
    .where((inner) =>
      inner.or([inner(`${table}.retention_days`, 'is not', null), inner(`${table}.legal_hold`, '=', 1)]),
    );

/** The column is null or names none of `ids`. */
const outside =
  (column: 'emails.domain_id' | 'emails.address_id', ids: (eb: EmailsBuilder) => Expression<unknown>) =>
  (eb: EmailsBuilder) =>
    eb.or([eb(column, 'is', null), eb.not(eb(column, 'in', ids(eb) as never))]);

/**
 * How long mail is kept: a period per account, per domain and per address, the most specific one set applying
 * (none set: kept forever), and a legal hold on a domain or an address that keeps its mail past any period.
 * `expireDue` deletes what has outlived its period, through the MailEraser.
 */
export class RetentionService {
  readonly #db: Db;
  readonly #clock: Clock;
  readonly #eraser: MailEraser;
  readonly #skipLocked: boolean;

  constructor(deps: { db: Db; clock: Clock; eraser: MailEraser }) {
    this.#db = deps.db;
    this.#clock = deps.clock;
    this.#eraser = deps.eraser;
    this.#skipLocked = onPostgres(deps.db);
  }

  async account(accountId: string): Promise<AccountRetention> {
    const row = await this.#db
      .selectFrom('accounts')
      .select('retention_days')
      .where('id', '=', accountId)
      .executeTakeFirstOrThrow();
    return { retentionDays: row.retention_days ?? null };
  }

  async setAccount(accountId: string, retentionDays: number | null): Promise<AccountRetention> {
    checkDays(retentionDays);
    await this.#db.updateTable('accounts').set({ retention_days: retentionDays }).where('id', '=', accountId).execute();
    return { retentionDays };
  }

  domain(accountId: string, id: string): Promise<ScopedRetention> {
    return this.#scoped('domains', accountId, id);
  }

  setDomain(accountId: string, id: string, change: RetentionChange): Promise<ScopedRetention> {
    return this.#setScoped('domains', accountId, id, change);
  }

  address(accountId: string, id: string): Promise<ScopedRetention> {
    return this.#scoped('email_addresses', accountId, id);
  }

  setAddress(accountId: string, id: string, change: RetentionChange): Promise<ScopedRetention> {
    return this.#setScoped('email_addresses', accountId, id, change);
  }

  async #scoped(table: 'domains' | 'email_addresses', accountId: string, id: string): Promise<ScopedRetention> {
    const row = await this.#db
      .selectFrom(table)
      .select(['id', 'retention_days', 'legal_hold'])
      .where('account_id', '=', accountId)
      .where('id', '=', id)
      .executeTakeFirst();
    if (!row) throw new NotFound(table === 'domains' ? 'Domain not found' : 'Email address not found');
    return { id: row.id, retentionDays: row.retention_days ?? null, legalHold: fromFlag(row.legal_hold ?? 0) };
  }

  async #setScoped(
    table: 'domains' | 'email_addresses',
    accountId: string,
    id: string,
    change: RetentionChange,
  ): Promise<ScopedRetention> {
    if (change.retentionDays !== undefined) checkDays(change.retentionDays);
    await this.#scoped(table, accountId, id);
    if (change.retentionDays !== undefined || change.legalHold !== undefined) {
      await this.#db
        .updateTable(table)
        .set({
          ...(change.retentionDays === undefined ? {} : { retention_days: change.retentionDays }),
          ...(change.legalHold === undefined ? {} : { legal_hold: toFlag(change.legalHold) }),
          updated_at: isoNow(this.#clock),
        })
        .where('account_id', '=', accountId)
        .where('id', '=', id)
        .execute();
    }
    return this.#scoped(table, accountId, id);
  }

  /**
   * Deletes every email past its retention period that no legal hold keeps, batch by batch, then the blobs; resolves
   * to how many emails it deleted. Mail with a delivery still pending waits for its outcome. The period of each
   * level is applied to the emails no more specific level decides for. An aborted `signal` (the server stopping)
   * ends the sweep after the batch in progress, its blobs left queued for the next sweep or start.
   */
  async expireDue(signal?: AbortSignal): Promise<number> {
    const now = this.#clock.now().getTime();
    const before = (days: number) => new Date(now - days * DAY_MS).toISOString();
    const scopes: { accountId: string; scope: (eb: EmailsBuilder) => Expression<SqlBool>[] }[] = [];
    const addresses = await this.#db
      .selectFrom('email_addresses')
      .innerJoin('domains', 'domains.id', 'email_addresses.domain_id')
      .select(['email_addresses.id', 'email_addresses.account_id', 'email_addresses.retention_days'])
      .where('email_addresses.retention_days', 'is not', null)
      .where('email_addresses.legal_hold', '=', 0)
      .where('domains.legal_hold', '=', 0)
      .execute();
    for (const address of addresses) {
      scopes.push({
        accountId: address.account_id,
        scope: (eb) => [
          eb('emails.address_id', '=', address.id),
          eb('emails.received_at', '<', before(address.retention_days!)),
        ],
      });
    }
    const domains = await this.#db
      .selectFrom('domains')
      .select(['id', 'account_id', 'retention_days'])
      .where('retention_days', 'is not', null)
      .where('legal_hold', '=', 0)
      .execute();
    for (const domain of domains) {
      scopes.push({
        accountId: domain.account_id,
        scope: (eb) => [
          eb('emails.domain_id', '=', domain.id),
          eb('emails.received_at', '<', before(domain.retention_days!)),
          outside('emails.address_id', decidingOwn('email_addresses', domain.account_id))(eb),
        ],
      });
    }
    const accounts = await this.#db
      .selectFrom('accounts')
      .select(['id', 'retention_days'])
      .where('retention_days', 'is not', null)
      .execute();
    for (const account of accounts) {
      scopes.push({
        accountId: account.id,
        scope: (eb) => [
          eb('emails.received_at', '<', before(account.retention_days!)),
          outside('emails.domain_id', decidingOwn('domains', account.id))(eb),
          outside('emails.address_id', decidingOwn('email_addresses', account.id))(eb),
        ],
      });
    }
    let expired = 0;
    for (const { accountId, scope } of scopes) {
      const selection = (eb: EmailsBuilder) =>
        eb.and([
          eb('emails.account_id', '=', accountId),
          ...scope(eb),
          eb.not(
            eb.exists(
              eb
                .selectFrom('deliveries')
                .select('deliveries.id')
                .whereRef('deliveries.email_id', '=', 'emails.id')
                .where('deliveries.status', 'in', ['pending', 'processing']),
            ),
          ),
        ]);
      for (;;) {
        if (signal?.aborted) return expired;
        const deleted = await this.#eraser.deleteBatch(selection, {
          limit: EXPIRY_BATCH,
          skipLocked: this.#skipLocked,
        });
        expired += deleted;
        if (deleted < EXPIRY_BATCH) break;
      }
    }
    await this.#eraser.deleteQueuedBlobs();
    return expired;
  }

  /** Deletes the blobs of deleted mail still queued; resolves to how many (see MailEraser). */
  deleteQueuedBlobs(): Promise<number> {
    return this.#eraser.deleteQueuedBlobs();
  }
}

function checkDays(days: number | null): void {
  if (days !== null && (!Number.isInteger(days) || days < 1 || days > MAX_RETENTION_DAYS)) {
    throw new Invalid(`retentionDays must be a whole number of days from 1 to ${MAX_RETENTION_DAYS}, or null`);
  }
}
