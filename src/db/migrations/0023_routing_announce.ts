import { type Kysely, sql } from 'kysely';
import { onPostgres } from '../dialect.ts';

/**
 * PostgreSQL: every change to what routing reads is announced on the installation's routing channel, so that each
 * process can keep its routing decisions until routing changes (see RoutingService) instead of querying per
 * recipient. The same changes as SQLite's routing version counts (migrations 0014 and 0018): inserts, deletes
 * (cascades from a deleted account included) and updates of a column routing reads. PostgreSQL delivers the
 * notification once the transaction has committed.
 */
const ROUTING_COLUMNS = {
  domains: [
    'id',
    'account_id',
    'domain',
    'status',
    'is_catch_all_enabled',
    'catch_all_endpoint_id',
    'receive_dmarc_emails',
    'include_subdomains',
  ],
  email_addresses: ['id', 'account_id', 'domain_id', 'address', 'endpoint_id', 'webhook_id', 'is_active'],
  endpoints: ['id', 'account_id', 'type', 'is_active'],
  webhooks: ['id', 'account_id', 'is_active'],
};

export async function up(db: Kysely<unknown>): Promise<void> {
  if (!onPostgres(db)) return;
  await sql`CREATE FUNCTION routing_announce() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      PERFORM pg_notify('mailroom_routing_' || current_schema(), '');
      RETURN NULL;
    END $$`.execute(db);
  for (const [table, columns] of Object.entries(ROUTING_COLUMNS)) {
    await sql
      .raw(
        `CREATE TRIGGER ${table}_routing_announce AFTER INSERT OR DELETE OR UPDATE OF ${columns.join(', ')}
          ON ${table} FOR EACH STATEMENT EXECUTE FUNCTION routing_announce()`,
      )
      .execute(db);
  }
}
