import type { Kysely } from 'kysely';

/**
 * Emails by envelope recipient, on both databases: an address search first counts the emails sent to that address
 * (see mailConditions' `subset`), which the full-text index answers slowly because it must intersect the address's
 * words, one of them the account's own domain that every email holds. The recipient leads so that this index never
 * stands in for the account's own indexes.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createIndex('emails_recipient_account_archived')
    .on('emails')
    .columns(['recipient', 'account_id', 'is_archived'])
    .execute();
}
