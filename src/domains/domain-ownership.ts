import { Conflict, Invalid, LimitReached } from '../core/index.ts';
import { type Db, type DomainsTable, onPostgres } from '../db/index.ts';
import { parentDomains } from './domain-name.ts';

/** Who may register a domain name: one owner per name, and a verified domain's owner owns the names under it. */

/**
 * Throws unless `domainName` is free for the account. Another account's registration that is not verified gives way
 * (its id is returned, for the caller to remove) when `mayDisplaceUnverified`, or when it was made before
 * `abandonedBefore`: verification gave up on it, and a name nobody proves to own is nobody's to hold.
 */
export async function assertAvailable(
  db: Db,
  accountId: string,
  domainName: string,
  options: { mayDisplaceUnverified: boolean; abandonedBefore: string },
): Promise<string | undefined> {
  const existing = await db
    .selectFrom('domains')
    .select(['id', 'account_id', 'status', 'created_at'])
    .where('domain', '=', domainName)
    .executeTakeFirst();
  if (!existing) return undefined;
  if (existing.account_id === accountId) {
    throw new Conflict('You have already added this domain to your account');
  }
  // A verified domain stays verified whatever its DNS does later (DomainChecker), so it is never displaced.
  const abandoned = existing.created_at < options.abandonedBefore;
  if (existing.status !== 'verified' && (options.mayDisplaceUnverified || abandoned)) return existing.id;
  throw new Conflict(
    'This domain is already registered on our platform. If you believe this is an error or you need to transfer ownership, please contact our support team.',
    { code: 'DOMAIN_ALREADY_REGISTERED' },
  );
}

/**
 * Subdomains can be included only on a verified root (registrable) domain, and only when no other account has
 * registered a name under it: theirs would otherwise share the root's wildcard MX record. Another account cannot
 * register one later, as the root is verified (see `create`).
 */
export async function assertMayIncludeSubdomains(db: Db, row: DomainsTable): Promise<void> {
  const above = parentDomains(row.domain);
  if (above.length > 0) {
    throw new Invalid(
      `Subdomains can only be included on a root domain: ${row.domain} is a subdomain of ${above[above.length - 1]}`,
    );
  }
  if (row.status !== 'verified') throw new Invalid('Domain must be verified before including subdomains');
  const foreign = await db
    .selectFrom('domains')
    .select('id')
    .where('domain', 'like', `%.${row.domain}`)
    .where('account_id', '!=', row.account_id)
    .executeTakeFirst();
  if (foreign) {
    throw new Conflict('Cannot include subdomains: another account owns a subdomain of this domain', {
      code: 'SUBDOMAIN_BELONGS_TO_ANOTHER_ACCOUNT',
    });
  }
}

/** The nearest verified domain above `domainName`, of whichever account: its owner is the subdomain's owner. */
export async function nearestVerifiedAncestor(db: Db, domainName: string) {
  const candidates = parentDomains(domainName);
  if (candidates.length === 0) return undefined;
  const rows = await db
    .selectFrom('domains')
    .select(['id', 'domain', 'account_id'])
    .where('status', '=', 'verified')
    .where('domain', 'in', candidates)
    .execute();
  // The nearest verified ancestor is the one the subdomain depends on.
  return candidates.map((name) => rows.find((row) => row.domain === name)).find(Boolean);
}

/**
 * Throws when the account has as many domains as its limit allows. Given the creating transaction, it also makes the
 * account's other creates wait for it (PostgreSQL: a row lock on the account; SQLite: the transaction's write lock),
 * so that concurrent creates each count the others' domains.
 */
export async function assertWithinDomainLimit(db: Db, accountId: string, inTransaction = false): Promise<void> {
  let query = db.selectFrom('accounts').select('domain_limit').where('id', '=', accountId);
  if (inTransaction && onPostgres(db)) query = query.forNoKeyUpdate();
  const account = await query.executeTakeFirstOrThrow();
  if (account.domain_limit === null) return;
  const owned = await db
    .selectFrom('domains')
    .select((eb) => eb.fn.countAll().as('n'))
    .where('account_id', '=', accountId)
    .executeTakeFirstOrThrow();
  if (Number(owned.n) >= account.domain_limit) {
    throw new LimitReached('Domain limit reached. Please upgrade your plan to add more domains.');
  }
}

/**
 * Whether the verified parent a subdomain is about to inherit from is still there, read in the inserting transaction
 * and kept from deletion until it commits: a delete under way is waited for (PostgreSQL: a key-share lock, which
 * the delete's row lock excludes; SQLite: the write lock), and a later one then finds the subdomain.
 */
export async function holdVerifiedParent(trx: Db, parentId: string): Promise<boolean> {
  let query = trx.selectFrom('domains').select('id').where('id', '=', parentId).where('status', '=', 'verified');
  if (onPostgres(trx)) query = query.forKeyShare();
  return (await query.executeTakeFirst()) !== undefined;
}

/** A verified domain's subdomains inherit their verification from it, so it cannot be deleted while it has any. */
export async function assertNoDependentSubdomains(db: Db, row: DomainsTable): Promise<void> {
  const dependents = await db
    .selectFrom('domains')
    .select(['id', 'domain', 'status'])
    .where('parent_domain_id', '=', row.id)
    .orderBy('domain')
    .execute();
  if (dependents.length > 0) {
    throw new Conflict(
      `Cannot delete root domain. This domain has ${dependents.length} subdomain(s) that depend on it: ${dependents
        .map((d) => d.domain)
        .join(', ')}`,
      { code: 'DOMAIN_HAS_DEPENDENT_SUBDOMAINS', dependentSubdomains: dependents },
    );
  }
}

/**
 * Reads the domain about to be deleted in the deleting transaction and keeps out what would depend on it until that
 * commits (PostgreSQL: a row lock, which the key-share holds of subdomain and address creates wait on or exclude).
 */
export async function lockForDelete(trx: Db, accountId: string, id: string): Promise<DomainsTable | undefined> {
  let query = trx.selectFrom('domains').selectAll().where('id', '=', id).where('account_id', '=', accountId);
  if (onPostgres(trx)) query = query.forUpdate();
  return query.executeTakeFirst();
}
