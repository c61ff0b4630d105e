import { type Kysely, sql } from 'kysely';

/**
 * The outbox's due jobs in the order they come due, indexed only while unfinished. With (status, next_attempt_at),
 * a claim for two statuses read every due job and sorted them to take the first few: a worker catching up after a
 * burst of thousands read them all at each claim. The partial index also leaves out the finished jobs, most of the
 * table, which no claim wants.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropIndex('deliveries_due').execute();
  await db.schema
    .createIndex('deliveries_unfinished_due')
    .on('deliveries')
    .column('next_attempt_at')
    .where(sql.ref('status'), 'in', ['pending', 'processing'])
    .execute();
}
