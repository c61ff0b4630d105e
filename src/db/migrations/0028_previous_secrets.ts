import type { Kysely } from 'kysely';

/**
 * The signing secret a webhook endpoint (or legacy webhook) had before its latest change, and until when deliveries
 * are signed with it too: Standard Webhooks' zero-downtime rotation (see src/endpoints/secret-rotation.ts).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  for (const table of ['endpoints', 'webhooks']) {
    await db.schema.alterTable(table).addColumn('previous_secret', 'text').execute();
    await db.schema.alterTable(table).addColumn('previous_secret_expires_at', 'text').execute();
  }
}
