import type { Kysely } from 'kysely';

/**
 * `round_start_attempt` is the number of attempts made before the job was last queued by hand (retry, replay), so a
 * manual retry gets a fresh automatic-retry budget while `attempts` keeps counting every attempt ever made.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .alterTable('deliveries')
    .addColumn('round_start_attempt', 'integer', (c) => c.notNull().defaultTo(0))
    .execute();
  await db.schema.createIndex('deliveries_account_status').on('deliveries').columns(['account_id', 'status']).execute();
}
