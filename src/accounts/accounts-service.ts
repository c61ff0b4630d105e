import { createHash, randomBytes } from 'node:crypto';
import { type Clock, Invalid, isoNow, NotFound, newId } from '../core/index.ts';
import type { Db } from '../db/index.ts';

export interface Account {
  id: string;
  name: string;
  domainLimit: number | null;
}

export interface IssuedKey {
  accountId: string;
  accountName: string;
  /** The full key. It is shown once and never stored. */
  key: string;
  prefix: string;
}

const KEY_PREFIX = 'mr_';
const ACCOUNT_NAME = /^[a-z0-9][a-z0-9_.-]{0,63}$/;

function hashKey(key: string): string {
  return createHash('sha256').update(key).digest('hex');
}

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

/** `length` uniformly random base62 characters (bytes of 248 and above are dropped to avoid modulo bias). */
function randomBase62(length: number): string {
  let out = '';
  while (out.length < length) {
    for (const byte of randomBytes(length)) {
      if (byte < 248 && out.length < length) out += BASE62[byte % 62];
    }
  }
  return out;
}

/**
 * `mr_` + 40 base62 characters (about 238 bits). The first 8 after `mr_` are the visible prefix that identifies a
 * key in listings without revealing it.
 */
function generateKey(): { key: string; prefix: string } {
  const key = `${KEY_PREFIX}${randomBase62(40)}`;
  return { key, prefix: key.slice(0, KEY_PREFIX.length + 8) };
}

export class AccountsService {
  private readonly db: Db;
  private readonly clock: Clock;

  constructor(db: Db, clock: Clock) {
    this.db = db;
    this.clock = clock;
  }

  async findByName(name: string): Promise<Account | undefined> {
    const row = await this.db.selectFrom('accounts').selectAll().where('name', '=', name).executeTakeFirst();
    return row && { id: row.id, name: row.name, domainLimit: row.domain_limit };
  }

  async get(accountId: string): Promise<Account> {
    const row = await this.db.selectFrom('accounts').selectAll().where('id', '=', accountId).executeTakeFirst();
    if (!row) throw new NotFound('Account not found');
    return { id: row.id, name: row.name, domainLimit: row.domain_limit };
  }

  async count(): Promise<number> {
    const row = await this.db
      .selectFrom('accounts')
      .select((eb) => eb.fn.countAll().as('n'))
      .executeTakeFirstOrThrow();
    return Number(row.n);
  }

  async findOrCreate(name: string): Promise<Account> {
    if (!ACCOUNT_NAME.test(name)) {
      throw new Invalid('Account names are 1-64 characters of a-z, 0-9, ".", "_" and "-"');
    }
    const existing = await this.findByName(name);
    if (existing) return existing;
    const account = { id: newId('acc'), name, domain_limit: null, created_at: isoNow(this.clock) };
    await this.db
      .insertInto('accounts')
      .values(account)
      .onConflict((oc) => oc.column('name').doNothing())
      .execute();
    return (await this.findByName(name))!;
  }

  /** Issues a new key for the named account, creating the account if needed. */
  async createKey(accountName: string): Promise<IssuedKey> {
    const account = await this.findOrCreate(accountName);
    const { key, prefix } = generateKey();
    await this.storeKey(account.id, key, prefix);
    return { accountId: account.id, accountName: account.name, key, prefix };
  }

  /** Makes sure `key` is a valid key of the named account (used for MAILROOM_API_KEY). Idempotent. */
  async ensureKey(accountName: string, key: string): Promise<Account> {
    const account = await this.findOrCreate(accountName);
    const existing = await this.db
      .selectFrom('api_keys')
      .select('account_id')
      .where('key_hash', '=', hashKey(key))
      .executeTakeFirst();
    if (existing && existing.account_id !== account.id) {
      throw new Invalid('That API key already belongs to another account');
    }
    if (!existing) await this.storeKey(account.id, key, key.slice(0, KEY_PREFIX.length + 8));
    return account;
  }

  /** The account a presented key belongs to, or undefined for an unknown key. */
  async authenticate(key: string): Promise<Account | undefined> {
    const row = await this.db
      .selectFrom('api_keys')
      .innerJoin('accounts', 'accounts.id', 'api_keys.account_id')
      .select(['accounts.id', 'accounts.name', 'accounts.domain_limit'])
      .where('api_keys.key_hash', '=', hashKey(key))
      .executeTakeFirst();
    return row && { id: row.id, name: row.name, domainLimit: row.domain_limit };
  }

  /** Sets the account's domain limit; null means unlimited. */
  async setDomainLimit(accountName: string, limit: number | null): Promise<Account> {
    if (limit !== null && (!Number.isInteger(limit) || limit < 0)) {
      throw new Invalid('The domain limit is a whole number of at least 0, or "unlimited"');
    }
    const account = await this.findByName(accountName);
    if (!account) throw new NotFound(`No account named ${accountName}`);
    await this.db.updateTable('accounts').set({ domain_limit: limit }).where('id', '=', account.id).execute();
    return { ...account, domainLimit: limit };
  }

  private async storeKey(accountId: string, key: string, prefix: string): Promise<void> {
    await this.db
      .insertInto('api_keys')
      .values({
        id: newId('key'),
        account_id: accountId,
        prefix,
        key_hash: hashKey(key),
        created_at: isoNow(this.clock),
        last_used_at: null,
      })
      .execute();
  }
}
