import { type Kysely, sql } from 'kysely';

/**
 * Ingest's duplicate check finds a retried copy through the account's Message-ID index, which threading needs
 * anyway. The (recipient, raw_sha256) index it used had a random key, so every stored email changed a page of its
 * own in it; it stays only for the emails without a Message-ID, the one case the Message-ID index cannot narrow.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropIndex('emails_dedupe').execute();
  await db.schema
    .createIndex('emails_dedupe_without_message_id')
    .on('emails')
    .columns(['recipient', 'raw_sha256'])
    .where(sql.ref('message_id'), 'is', null)
    .execute();
}
