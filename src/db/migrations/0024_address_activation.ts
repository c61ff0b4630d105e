import { type Kysely, sql } from 'kysely';

/**
 * When each address last began receiving: set when it is created active and when it is switched on again, so that a
 * silent-inbox period counts from then rather than from an address created long before and switched off meanwhile.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('email_addresses').addColumn('activated_at', 'text').execute();
  await sql`update email_addresses set activated_at = created_at where is_active = 1`.execute(db);
}
