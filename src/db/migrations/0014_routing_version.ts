import { type Kysely, sql } from 'kysely';
import { onPostgres } from '../dialect.ts';

/**
 * SQLite: a counter that every change to what routing reads moves on, so that the router can keep its decisions
 * until routing changes (see RoutingService). Triggers count every change, however it is made: through the API, by
 * the DNS verification, by a cascade from a deleted account. Updates count only when they touch a column the routing
 * query reads, so bookkeeping such as a domain's last DNS check leaves the decisions in place.
 *
 * PostgreSQL has none: reading a counter there is a round trip like the routing query itself, and one row that every
 * routing change updates would make concurrent changes queue on its lock.
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
  ],
  email_addresses: ['id', 'account_id', 'domain_id', 'address', 'endpoint_id', 'webhook_id', 'is_active'],
  endpoints: ['id', 'account_id', 'type', 'is_active'],
  webhooks: ['id', 'account_id', 'is_active'],
};

export async function up(db: Kysely<unknown>): Promise<void> {
  if (onPostgres(db)) return;
  await sql`CREATE TABLE routing_version (id INTEGER PRIMARY KEY CHECK (id = 1), version INTEGER NOT NULL)`.execute(db);
  await sql`INSERT INTO routing_version (id, version) VALUES (1, 0)`.execute(db);
  const bump = 'BEGIN UPDATE routing_version SET version = version + 1; END';
  for (const [table, columns] of Object.entries(ROUTING_COLUMNS)) {
    await sql.raw(`CREATE TRIGGER ${table}_routing_insert AFTER INSERT ON ${table} ${bump}`).execute(db);
    await sql.raw(`CREATE TRIGGER ${table}_routing_delete AFTER DELETE ON ${table} ${bump}`).execute(db);
    await sql
      .raw(`CREATE TRIGGER ${table}_routing_update AFTER UPDATE OF ${columns.join(', ')} ON ${table} ${bump}`)
      .execute(db);
  }
}
