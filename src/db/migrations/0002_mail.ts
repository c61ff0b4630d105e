import type { Kysely } from 'kysely';

/** Received mail, its threads, and the delivery outbox that ingest fills in the same transaction. */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('threads')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.id').onDelete('cascade'))
    .addColumn('root_message_id', 'text', (c) => c.notNull())
    .addColumn('normalized_subject', 'text', (c) => c.notNull())
    .addColumn('message_count', 'integer', (c) => c.notNull())
    .addColumn('last_message_at', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema
    .createIndex('threads_account_last')
    .on('threads')
    .columns(['account_id', 'last_message_at'])
    .execute();

  await db.schema
    .createTable('emails')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.id').onDelete('cascade'))
    .addColumn('domain_id', 'text')
    .addColumn('address_id', 'text')
    .addColumn('recipient', 'text', (c) => c.notNull())
    .addColumn('mail_from', 'text')
    .addColumn('helo', 'text')
    .addColumn('client_ip', 'text')
    .addColumn('message_id', 'text')
    .addColumn('subject', 'text')
    .addColumn('from_address', 'text')
    .addColumn('from_name', 'text')
    .addColumn('from_json', 'text')
    .addColumn('to_json', 'text')
    .addColumn('cc_json', 'text')
    .addColumn('bcc_json', 'text')
    .addColumn('reply_to_json', 'text')
    .addColumn('sent_date', 'text')
    .addColumn('in_reply_to', 'text')
    .addColumn('references_json', 'text')
    .addColumn('priority', 'text')
    .addColumn('text_body', 'text')
    .addColumn('html_body', 'text')
    .addColumn('headers_json', 'text')
    .addColumn('attachments_json', 'text', (c) => c.notNull())
    .addColumn('attachment_count', 'integer', (c) => c.notNull())
    .addColumn('parse_success', 'integer', (c) => c.notNull())
    .addColumn('parse_error', 'text')
    .addColumn('raw_blob_key', 'text', (c) => c.notNull())
    .addColumn('raw_size', 'integer', (c) => c.notNull())
    .addColumn('raw_sha256', 'text', (c) => c.notNull())
    .addColumn('spf', 'text', (c) => c.notNull())
    .addColumn('dkim', 'text', (c) => c.notNull())
    .addColumn('dmarc', 'text', (c) => c.notNull())
    .addColumn('arc', 'text', (c) => c.notNull())
    .addColumn('spam', 'text', (c) => c.notNull())
    .addColumn('virus', 'text', (c) => c.notNull())
    .addColumn('auth_results', 'text')
    .addColumn('thread_id', 'text')
    .addColumn('thread_position', 'integer')
    .addColumn('is_read', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('read_at', 'text')
    .addColumn('is_archived', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('archived_at', 'text')
    .addColumn('processing_ms', 'integer', (c) => c.notNull())
    .addColumn('received_at', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('emails_account_received').on('emails').columns(['account_id', 'received_at']).execute();
  await db.schema.createIndex('emails_account_thread').on('emails').columns(['account_id', 'thread_id']).execute();
  await db.schema.createIndex('emails_account_message_id').on('emails').columns(['account_id', 'message_id']).execute();
  await db.schema.createIndex('emails_dedupe').on('emails').columns(['recipient', 'raw_sha256']).execute();
  await db.schema.createIndex('emails_raw_blob').on('emails').column('raw_blob_key').execute();

  await db.schema
    .createTable('deliveries')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.id').onDelete('cascade'))
    .addColumn('email_id', 'text', (c) => c.notNull().references('emails.id').onDelete('cascade'))
    .addColumn('target_type', 'text', (c) => c.notNull())
    .addColumn('target_id', 'text', (c) => c.notNull())
    .addColumn('delivery_type', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('attempts', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('next_attempt_at', 'text')
    .addColumn('lease_owner', 'text')
    .addColumn('lease_expires_at', 'text')
    .addColumn('last_attempt_at', 'text')
    .addColumn('last_status_code', 'integer')
    .addColumn('last_error', 'text')
    .addColumn('response_data', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .addUniqueConstraint('deliveries_email_target', ['email_id', 'target_id'])
    .execute();
  await db.schema.createIndex('deliveries_due').on('deliveries').columns(['status', 'next_attempt_at']).execute();
  await db.schema.createIndex('deliveries_target').on('deliveries').columns(['target_id', 'created_at']).execute();

  await db.schema
    .createTable('delivery_attempts')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('delivery_id', 'text', (c) => c.notNull().references('deliveries.id').onDelete('cascade'))
    .addColumn('attempt', 'integer', (c) => c.notNull())
    .addColumn('started_at', 'text', (c) => c.notNull())
    .addColumn('duration_ms', 'integer', (c) => c.notNull())
    .addColumn('success', 'integer', (c) => c.notNull())
    .addColumn('status_code', 'integer')
    .addColumn('response_body', 'text')
    .addColumn('error', 'text')
    .addColumn('url', 'text')
    .addColumn('recipients', 'text')
    .execute();
  await db.schema.createIndex('delivery_attempts_delivery').on('delivery_attempts').column('delivery_id').execute();
}
