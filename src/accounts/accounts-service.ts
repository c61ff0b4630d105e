import { createHash, randomBytes } from 'node:crypto';
import { type Clock, Conflict, Invalid, isoNow, LimitReached, NotFound, newId } from '../core/index.ts';
import type { ApiKeysTable, Db } from '../db/index.ts';

export interface Account {
  id: string;
  name: string;
  domainLimit: number | null;
}

/** What is known of an API key; the key itself is never stored, only its hash. */
export interface ApiKey {
  id: string;
  accountId: string;
  accountName: string;
  prefix: string;
  createdAt: string;
  lastUsedAt: string | null;
  revokedAt: string | null;
}

export interface IssuedKey extends ApiKey {
  /** The full key. It is shown once and never stored. */
  key: string;
}

/**
 * Active keys an account may hold through the API (the operator's CLI is not held to it): a leaked key cannot mint
 * keys without end to outlive its revocation.
 */
export const MAX_ACTIVE_KEYS_PER_ACCOUNT = 50;

/** A key's last use is written when the stored one is older than this, not on every request. */
const LAST_USED_RESOLUTION_MS = 60_000;

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
    return this.issueKey(await this.findOrCreate(accountName));
  }

  /** Issues a new key for an existing account. */
  async issueKey(account: Pick<Account, 'id' | 'name'>, db: Db = this.db): Promise<IssuedKey> {
    const { key, prefix } = generateKey();
    const row = await this.storeKey(db, account.id, key, prefix);
    return { ...presentKey({ ...row, account_name: account.name }), key };
  }

  /** Issues another key for the account through the API: 403 once it holds MAX_ACTIVE_KEYS_PER_ACCOUNT. */
  async issueAdditionalKey(account: Pick<Account, 'id' | 'name'>): Promise<IssuedKey> {
    return this.db.transaction().execute(async (trx) => {
      // Writing the account row first serialises the account's concurrent issues, so each counts the others' keys.
      await trx
        .updateTable('accounts')
        .set((eb) => ({ name: eb.ref('name') }))
        .where('id', '=', account.id)
        .execute();
      const active = await trx
        .selectFrom('api_keys')
        .select((eb) => eb.fn.countAll().as('n'))
        .where('account_id', '=', account.id)
        .where('revoked_at', 'is', null)
        .executeTakeFirstOrThrow();
      if (Number(active.n) >= MAX_ACTIVE_KEYS_PER_ACCOUNT) {
        throw new LimitReached(
          `API key limit reached: an account can have at most ${MAX_ACTIVE_KEYS_PER_ACCOUNT} active keys; revoke one first`,
        );
      }
      return this.issueKey(account, trx);
    });
  }

  /** The keys of one account, or of every account when `accountId` is null (the operator's CLI), oldest first. */
  async listKeys(accountId: string | null): Promise<ApiKey[]> {
    let query = this.selectKeys(this.db);
    if (accountId !== null) query = query.where('api_keys.account_id', '=', accountId);
    const rows = await query.orderBy('api_keys.created_at').orderBy('api_keys.id').execute();
    return rows.map(presentKey);
  }

  /**
   * Revokes a key of the given account (any account when null); it is refused from the next request on, in every
   * process, since authentication reads the key's row each time. Revoking a revoked key changes nothing. The last
   * active key of an account cannot be revoked, so an account is never locked out of the API: rotate it instead.
   */
  async revokeKey(accountId: string | null, keyId: string): Promise<ApiKey> {
    return this.db.transaction().execute(async (trx) => {
      const key = await this.findKey(trx, accountId, keyId);
      if (key.revokedAt) return key;
      // Writing the account row first serialises concurrent revocations for one account, so two requests cannot
      // each revoke one of its last two keys.
      await trx.updateTable('accounts').set({ name: key.accountName }).where('id', '=', key.accountId).execute();
      const others = await trx
        .selectFrom('api_keys')
        .select((eb) => eb.fn.countAll().as('n'))
        .where('account_id', '=', key.accountId)
        .where('revoked_at', 'is', null)
        .where('id', '<>', key.id)
        .executeTakeFirstOrThrow();
      if (Number(others.n) === 0) {
        throw new Conflict(
          'Cannot revoke the last active API key of an account: create another key first, or rotate it',
        );
      }
      const revokedAt = isoNow(this.clock);
      await trx.updateTable('api_keys').set({ revoked_at: revokedAt }).where('id', '=', key.id).execute();
      return { ...key, revokedAt };
    });
  }

  /** Issues a new key for the account of the given key and revokes that key, in one transaction. */
  async rotateKey(keyId: string): Promise<{ issued: IssuedKey; revoked: ApiKey }> {
    return this.db.transaction().execute(async (trx) => {
      const old = await this.findKey(trx, null, keyId);
      if (old.revokedAt) throw new Conflict(`API key ${old.id} is already revoked`);
      const issued = await this.issueKey({ id: old.accountId, name: old.accountName }, trx);
      const revokedAt = isoNow(this.clock);
      await trx.updateTable('api_keys').set({ revoked_at: revokedAt }).where('id', '=', old.id).execute();
      return { issued, revoked: { ...old, revokedAt } };
    });
  }

  /**
   * Makes sure `key` is a key of the named account (used for MAILROOM_API_KEY). Idempotent; a revoked key stays
   * revoked, so restarting with it does not undo the revocation: its `revokedAt` says so.
   */
  async ensureKey(accountName: string, key: string): Promise<{ account: Account; revokedAt: string | null }> {
    const account = await this.findOrCreate(accountName);
    const existing = await this.db
      .selectFrom('api_keys')
      .select(['account_id', 'revoked_at'])
      .where('key_hash', '=', hashKey(key))
      .executeTakeFirst();
    if (existing && existing.account_id !== account.id) {
      throw new Invalid(
        `MAILROOM_API_KEY is a key of another account than "${accountName}": unset it, or set a key of "${accountName}"`,
      );
    }
    if (!existing) await this.storeKey(this.db, account.id, key, key.slice(0, KEY_PREFIX.length + 8));
    return { account, revokedAt: existing?.revoked_at ?? null };
  }

  /**
   * The account a presented key belongs to, or undefined for an unknown or revoked key. Nothing is cached: each call
   * reads the key's row, so a revocation by any process on the same database applies to the next request. The key's
   * id comes with it, for what records who did something.
   */
  async authenticate(key: string): Promise<(Account & { keyId: string }) | undefined> {
    const row = await this.db
      .selectFrom('api_keys')
      .innerJoin('accounts', 'accounts.id', 'api_keys.account_id')
      .select([
        'api_keys.id as key_id',
        'api_keys.last_used_at',
        'accounts.id',
        'accounts.name',
        'accounts.domain_limit',
      ])
      .where('api_keys.key_hash', '=', hashKey(key))
      .where('api_keys.revoked_at', 'is', null)
      .executeTakeFirst();
    if (!row) return undefined;
    await this.noteUse(row.key_id, row.last_used_at);
    return { id: row.id, name: row.name, domainLimit: row.domain_limit, keyId: row.key_id };
  }

  /** Whether a key is still in force: not revoked, by this process or another. */
  async isKeyActive(keyId: string): Promise<boolean> {
    const row = await this.db
      .selectFrom('api_keys')
      .select('id')
      .where('id', '=', keyId)
      .where('revoked_at', 'is', null)
      .executeTakeFirst();
    return row !== undefined;
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

  /** Records a key's use when the stored time is older than the resolution; the condition holds across processes. */
  private async noteUse(keyId: string, lastUsedAt: string | null): Promise<void> {
    const now = this.clock.now();
    const staleBefore = new Date(now.getTime() - LAST_USED_RESOLUTION_MS).toISOString();
    if (lastUsedAt !== null && lastUsedAt >= staleBefore) return;
    await this.db
      .updateTable('api_keys')
      .set({ last_used_at: now.toISOString() })
      .where('id', '=', keyId)
      .where((eb) => eb.or([eb('last_used_at', 'is', null), eb('last_used_at', '<', staleBefore)]))
      .execute();
  }

  private selectKeys(db: Db) {
    return db
      .selectFrom('api_keys')
      .innerJoin('accounts', 'accounts.id', 'api_keys.account_id')
      .select([
        'api_keys.id',
        'api_keys.account_id',
        'accounts.name as account_name',
        'api_keys.prefix',
        'api_keys.created_at',
        'api_keys.last_used_at',
        'api_keys.revoked_at',
      ]);
  }

  private async findKey(db: Db, accountId: string | null, keyId: string): Promise<ApiKey> {
    let query = this.selectKeys(db).where('api_keys.id', '=', keyId);
    if (accountId !== null) query = query.where('api_keys.account_id', '=', accountId);
    const row = await query.executeTakeFirst();
    if (!row) throw new NotFound('API key not found');
    return presentKey(row);
  }

  private async storeKey(db: Db, accountId: string, key: string, prefix: string): Promise<ApiKeysTable> {
    const row: ApiKeysTable = {
      id: newId('key'),
      account_id: accountId,
      prefix,
      key_hash: hashKey(key),
      created_at: isoNow(this.clock),
      last_used_at: null,
      revoked_at: null,
    };
    await db.insertInto('api_keys').values(row).execute();
    return row;
  }
}

function presentKey(
  row: Pick<ApiKeysTable, 'id' | 'account_id' | 'prefix' | 'created_at' | 'last_used_at' | 'revoked_at'> & {
    account_name: string;
  },
): ApiKey {
  return {
    id: row.id,
    accountId: row.account_id,
    accountName: row.account_name,
    prefix: row.prefix,
    createdAt: row.created_at,
    lastUsedAt: row.last_used_at,
    revokedAt: row.revoked_at,
  };
}
