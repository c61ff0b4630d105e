import type { Kysely } from 'kysely';

/**
 * Retention (owned by src/retention): a period in days on the account, a domain or an address (null keeps mail
 * forever; the most specific one set applies), and a legal hold on a domain or an address that keeps its mail past
 * any period. `blob_erasures` holds the raw blobs of deleted emails until they are deleted too, in the transaction
 * that deletes the rows, so a crash between the two leaves work to finish, never content behind. `mail_erasures` is
 * the audit record of each erase by query: who, when, the filter and how many, never the content.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('accounts').addColumn('retention_days', 'integer').execute();
  for (const table of ['domains', 'email_addresses']) {
    await db.schema.alterTable(table).addColumn('retention_days', 'integer').execute();
    await db.schema
      .alterTable(table)
      .addColumn('legal_hold', 'integer', (c) => c.notNull().defaultTo(0))
      .execute();
  }

  await db.schema
    .createTable('blob_erasures')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('blob_key', 'text', (c) => c.notNull())
    .addColumn('queued_at', 'text', (c) => c.notNull())
    .execute();

  await db.schema
    .createTable('mail_erasures')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.id').onDelete('cascade'))
    .addColumn('api_key_id', 'text', (c) => c.notNull())
    .addColumn('filter_json', 'text', (c) => c.notNull())
    .addColumn('erased_count', 'integer', (c) => c.notNull())
    .addColumn('erased_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema
    .createIndex('mail_erasures_account_erased')
    .on('mail_erasures')
    .columns(['account_id', 'erased_at'])
    .execute();
}
