import type { Kysely } from 'kysely';

/**
 * When a delivery was last queued by hand (retry, resend, replay); null for one never queued again, whose queue time
 * is its `created_at`. The metrics' oldest-pending age counts from here, not from a first queueing days before.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('deliveries').addColumn('queued_at', 'text').execute();
}
