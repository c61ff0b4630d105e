import { type Kysely, sql } from 'kysely';

/**
 * The newest-first walk of a `has:attachment` search, on both databases. About one email in ten has an attachment,
 * so walking the account's whole index to fill a page tests ten emails against the search words for each one kept
 * (17,000 tested for a page of `shipping has:attachment` at a million emails); this index holds only the emails
 * with attachments. Partial, so it costs nothing for the others.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createIndex('emails_with_attachments_account_archived_received')
    .on('emails')
    .columns(['account_id', 'is_archived', 'received_at'])
    .where(sql.ref('attachment_count'), '>', 0)
    .execute();
}
