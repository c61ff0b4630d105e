import type { Db } from '../db/index.ts';
import { fromFlag } from '../db/index.ts';

export interface EndpointSummary {
  id: string;
  name: string;
  type: string;
  isActive: boolean;
}

/** The account's endpoint with that id, in the short form other capabilities show (catch-all, routing). */
export async function findEndpointSummary(db: Db, accountId: string, id: string): Promise<EndpointSummary | undefined> {
  const row = await db
    .selectFrom('endpoints')
    .select(['id', 'name', 'type', 'is_active'])
    .where('id', '=', id)
    .where('account_id', '=', accountId)
    .executeTakeFirst();
  return row && { id: row.id, name: row.name, type: row.type, isActive: fromFlag(row.is_active) };
}
