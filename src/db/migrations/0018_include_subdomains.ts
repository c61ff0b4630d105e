import { type Kysely, sql } from 'kysely';
import { onPostgres } from '../dialect.ts';

/**
 * `include_subdomains`: a verified root domain also receives mail for every subdomain not registered on its own
 * (see RoutingService). Routing reads the flag, so on SQLite the trigger that moves the routing version on for
 * domain updates (migration 0014) is made to watch it too.
 */
const DOMAIN_ROUTING_COLUMNS = [
  'id',
  'account_id',
  'domain',
  'status',
  'is_catch_all_enabled',
  'catch_all_endpoint_id',
  'receive_dmarc_emails',
  'include_subdomains',
];

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .alterTable('domains')
    .addColumn('include_subdomains', 'integer', (c) => c.notNull().defaultTo(0))
    .execute();
  if (onPostgres(db)) return;
  await sql`DROP TRIGGER domains_routing_update`.execute(db);
  await sql
    .raw(
      `CREATE TRIGGER domains_routing_update AFTER UPDATE OF ${DOMAIN_ROUTING_COLUMNS.join(', ')} ON domains
        BEGIN UPDATE routing_version SET version = version + 1; END`,
    )
    .execute(db);
}
