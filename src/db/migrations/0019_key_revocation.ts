import type { Kysely } from 'kysely';

/** A revoked API key stays listed, with the time it was revoked, and is refused from then on. */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('api_keys').addColumn('revoked_at', 'text').execute();
  await db.schema.createIndex('api_keys_account').on('api_keys').columns(['account_id', 'created_at']).execute();
}
