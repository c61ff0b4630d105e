import { type Db, fromFlag, onPostgres } from '../db/index.ts';

/**
 * Reads the account's endpoint (or legacy webhook) in the caller's transaction, which is about to store a reference
 * to it, and keeps it from being deleted until that commits: a delete already under way is waited for and then
 * finds no row here, and one that comes later waits and then clears the new reference. PostgreSQL: a key-share lock
 * (its delete takes the row lock first); SQLite: the transaction holds the write lock. Undefined when it is absent.
 */
export async function holdRoutingTarget(
  trx: Db,
  accountId: string,
  table: 'endpoints' | 'webhooks',
  id: string,
): Promise<{ isActive: boolean } | undefined> {
  let query = trx.selectFrom(table).select('is_active').where('id', '=', id).where('account_id', '=', accountId);
  if (onPostgres(trx)) query = query.forKeyShare();
  const row = await query.executeTakeFirst();
  return row && { isActive: fromFlag(row.is_active) };
}
