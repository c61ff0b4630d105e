import { type Kysely, sql } from 'kysely';

/**
 * Health alerts (owned by src/alerts). `alert_settings` holds an account's alert endpoint and its silent-inbox
 * period. `alerts` holds each alert from raise to clear; the partial unique index allows one open alert per account,
 * kind and subject, so a condition seen by several processes at once is raised once. `alert_notifications` is the
 * outbox of signed alert webhooks, with attempts and a due time like the delivery outbox.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('alert_settings')
    .addColumn('account_id', 'text', (c) => c.primaryKey().references('accounts.id').onDelete('cascade'))
    .addColumn('endpoint_url', 'text')
    .addColumn('secret', 'text', (c) => c.notNull())
    .addColumn('silent_after_hours', 'integer')
    .addColumn('silence_checked_at', 'text')
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .execute();

  await db.schema
    .createTable('alerts')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.id').onDelete('cascade'))
    .addColumn('kind', 'text', (c) => c.notNull())
    .addColumn('subject_type', 'text', (c) => c.notNull())
    .addColumn('subject_id', 'text', (c) => c.notNull())
    .addColumn('subject_name', 'text', (c) => c.notNull())
    .addColumn('details', 'text', (c) => c.notNull())
    .addColumn('raised_at', 'text', (c) => c.notNull())
    .addColumn('cleared_at', 'text')
    .addColumn('acknowledged_at', 'text')
    .addColumn('acknowledged_by', 'text')
    .addColumn('checked_at', 'text')
    .execute();
  await db.schema
    .createIndex('alerts_open_subject')
    .on('alerts')
    .columns(['account_id', 'kind', 'subject_id'])
    .unique()
    .where(sql.ref('cleared_at'), 'is', null)
    .execute();
  await db.schema
    .createIndex('alerts_open_kind_checked')
    .on('alerts')
    .columns(['kind', 'checked_at'])
    .where(sql.ref('cleared_at'), 'is', null)
    .execute();
  await db.schema
    .createIndex('alerts_account_raised')
    .on('alerts')
    .columns(['account_id', 'raised_at', 'id'])
    .execute();
  await db.schema
    .createIndex('alerts_account_subject_cleared')
    .on('alerts')
    .columns(['account_id', 'kind', 'subject_id', 'cleared_at'])
    .execute();

  await db.schema
    .createTable('alert_notifications')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.id').onDelete('cascade'))
    .addColumn('alert_id', 'text', (c) => c.notNull())
    .addColumn('type', 'text', (c) => c.notNull())
    .addColumn('body', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('attempts', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('next_attempt_at', 'text')
    .addColumn('last_status_code', 'integer')
    .addColumn('last_error', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema
    .createIndex('alert_notifications_due')
    .on('alert_notifications')
    .columns(['status', 'next_attempt_at'])
    .execute();
}
