import type { Db } from '../db/index.ts';

/**
 * The ids of the account's addresses and domains that received mail at or after `since`: one pass over the account's
 * mail of that period, in its arrival index.
 */
export async function receivedSince(db: Db, accountId: string, since: string): Promise<Set<string>> {
  const rows = await db
    .selectFrom('emails')
    .select(['address_id', 'domain_id'])
    .where('account_id', '=', accountId)
    .where('received_at', '>=', since)
    .groupBy(['address_id', 'domain_id'])
    .execute();
  return new Set(rows.flatMap((row) => [row.address_id, row.domain_id].filter((id): id is string => id !== null)));
}
