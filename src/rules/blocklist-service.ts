import { type Clock, Conflict, Invalid, isoNow, NotFound, newId, type Page } from '../core/index.ts';
import type { Db } from '../db/index.ts';
import type { RuleEvaluator } from './rule-evaluator.ts';

export interface BlockedSender {
  id: string;
  /** An address, or `*@domain` for every address of the domain; lower-case. */
  emailAddress: string;
  createdAt: string;
}

/** `local@domain` or `*@domain`, without spaces, angle brackets or further wildcards. */
const BLOCKABLE = /^(?:\*|[^\s@<>*]+)@[^\s@<>*]+$/;
const MAX_ADDRESS_LENGTH = 320;

function blockable(value: unknown): string {
  const address = typeof value === 'string' ? value.trim().toLowerCase() : '';
  if (!address) throw new Invalid('emailAddress is required');
  if (address.length > MAX_ADDRESS_LENGTH || !BLOCKABLE.test(address)) {
    throw new Invalid('emailAddress must be an email address or *@domain');
  }
  return address;
}

/**
 * The account's blocked senders. Mail from one is stored and flagged but not routed: ingest runs each entry as a
 * block rule ahead of the account's rules (see RuleEvaluator), so there is one mechanism for both.
 */
export class BlocklistService {
  readonly #db: Db;
  readonly #clock: Clock;
  readonly #evaluator: RuleEvaluator;

  constructor(deps: { db: Db; clock: Clock; evaluator: RuleEvaluator }) {
    this.#db = deps.db;
    this.#clock = deps.clock;
    this.#evaluator = deps.evaluator;
  }

  /** Newest first. */
  async list(accountId: string, page: { limit: number; offset: number }): Promise<Page<BlockedSender>> {
    const base = this.#db.selectFrom('blocked_senders').where('account_id', '=', accountId);
    const [rows, count] = await Promise.all([
      base.selectAll().orderBy('id', 'desc').limit(page.limit).offset(page.offset).execute(),
      base.select((eb) => eb.fn.countAll().as('n')).executeTakeFirstOrThrow(),
    ]);
    return {
      items: rows.map((row) => ({ id: row.id, emailAddress: row.email_address, createdAt: row.created_at })),
      total: Number(count.n),
    };
  }

  async block(accountId: string, emailAddress: unknown): Promise<BlockedSender> {
    const address = blockable(emailAddress);
    const entry = { id: newId('blk'), emailAddress: address, createdAt: isoNow(this.#clock) };
    const inserted = await this.#db
      .insertInto('blocked_senders')
      .values({ id: entry.id, account_id: accountId, email_address: address, created_at: entry.createdAt })
      .onConflict((conflict) => conflict.columns(['account_id', 'email_address']).doNothing())
      .executeTakeFirst();
    if (Number(inserted.numInsertedOrUpdatedRows ?? 0) === 0) throw new Conflict('Email address is already blocked');
    this.#evaluator.invalidate(accountId);
    return entry;
  }

  async unblock(accountId: string, emailAddress: unknown): Promise<{ emailAddress: string }> {
    const address = blockable(emailAddress);
    const deleted = await this.#db
      .deleteFrom('blocked_senders')
      .where('account_id', '=', accountId)
      .where('email_address', '=', address)
      .executeTakeFirst();
    if (Number(deleted.numDeletedRows) === 0) throw new NotFound('Email address is not blocked');
    this.#evaluator.invalidate(accountId);
    return { emailAddress: address };
  }
}
