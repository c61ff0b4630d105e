import type { Kysely } from 'kysely';

/**
 * Guard-style rules and the sender blocklist (owned by rules), and what they did to each stored email. Ingest reads
 * an account's rules in priority order, so the index leads with the account and the priority. Blocklist entries are
 * unique per account: adding one twice is a conflict, not a second row.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('rules')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.id').onDelete('cascade'))
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('description', 'text')
    .addColumn('is_active', 'integer', (c) => c.notNull().defaultTo(1))
    .addColumn('priority', 'integer', (c) => c.notNull())
    .addColumn('conditions_json', 'text', (c) => c.notNull())
    .addColumn('action', 'text', (c) => c.notNull())
    .addColumn('action_endpoint_id', 'text')
    .addColumn('action_tag', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('rules_account_priority').on('rules').columns(['account_id', 'priority', 'id']).execute();

  await db.schema
    .createTable('blocked_senders')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.id').onDelete('cascade'))
    .addColumn('email_address', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema
    .createIndex('blocked_senders_account_address')
    .on('blocked_senders')
    .columns(['account_id', 'email_address'])
    .unique()
    .execute();

  await db.schema.alterTable('emails').addColumn('rule_matches_json', 'text').execute();
}
