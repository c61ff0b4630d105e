import { type Kysely, sql } from 'kysely';
import { onPostgres } from '../dialect.ts';

/**
 * Exact counts of each account's emails by the list filters that need no search (domain, archived, parse status,
 * read), so an unsearched list answers `pagination.total` without counting a million rows. Triggers keep them in
 * the same transaction as the change to `emails`, whichever code makes it. An email without a domain counts under
 * domain_id ''.
 *
 * PostgreSQL: several processes ingest into one account at once, and a single counter row would make their commits
 * queue behind each other. Each account's counts are split over EMAIL_COUNT_SHARDS rows, and a transaction first
 * claims a shard no other open transaction holds (a transaction-scoped advisory lock per account and shard, tried
 * from a per-connection start so that connections spread out), so writers never wait on each other's counter rows
 * and cannot deadlock on them. Only when every shard of the account is taken does it wait for its own. Readers sum
 * the shards. SQLite has one writer at a time and uses shard 0.
 */
const EMAIL_COUNT_SHARDS = 32;

const KEY_COLUMNS = ['account_id', 'domain_id', 'is_archived', 'parse_success', 'is_read'] as const;
const KEY = `${KEY_COLUMNS.join(', ')}, shard`;

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('email_counts')
    .addColumn('account_id', 'text', (c) => c.notNull())
    .addColumn('domain_id', 'text', (c) => c.notNull())
    .addColumn('is_archived', 'integer', (c) => c.notNull())
    .addColumn('parse_success', 'integer', (c) => c.notNull())
    .addColumn('is_read', 'integer', (c) => c.notNull())
    .addColumn('shard', 'integer', (c) => c.notNull())
    .addColumn('count', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('email_counts_key', [...KEY_COLUMNS, 'shard'])
    .execute();
  if (onPostgres(db)) await postgresTriggers(db);
  else await sqliteTriggers(db);
  // The triggers exist before the existing emails are counted, and on PostgreSQL creating them locks out writers
  // until this migration commits, so no email is counted twice or missed.
  await sql
    .raw(
      `INSERT INTO email_counts (${KEY}, count)
        SELECT account_id, coalesce(domain_id, ''), is_archived, parse_success, is_read, 0, count(*)
        FROM emails GROUP BY account_id, coalesce(domain_id, ''), is_archived, parse_success, is_read`,
    )
    .execute(db);
}

async function sqliteTriggers(db: Kysely<unknown>): Promise<void> {
  const add = (row: 'new' | 'old', delta: string) =>
    `INSERT INTO email_counts (${KEY}, count)
      VALUES (${row}.account_id, coalesce(${row}.domain_id, ''), ${row}.is_archived, ${row}.parse_success, ${row}.is_read, 0, ${delta})
      ON CONFLICT (${KEY}) DO UPDATE SET count = count + excluded.count;`;
  await sql.raw(`CREATE TRIGGER email_counts_insert AFTER INSERT ON emails BEGIN ${add('new', '1')} END`).execute(db);
  await sql.raw(`CREATE TRIGGER email_counts_delete AFTER DELETE ON emails BEGIN ${add('old', '-1')} END`).execute(db);
  const changed = KEY_COLUMNS.map((column) => `old.${column} IS NOT new.${column}`).join(' OR ');
  await sql
    .raw(
      `CREATE TRIGGER email_counts_update AFTER UPDATE OF ${KEY_COLUMNS.join(', ')} ON emails WHEN ${changed}
        BEGIN ${add('old', '-1')} ${add('new', '1')} END`,
    )
    .execute(db);
}

async function postgresTriggers(db: Kysely<unknown>): Promise<void> {
  await sql
    .raw(
      `CREATE FUNCTION email_counts_shard(account text) RETURNS integer LANGUAGE plpgsql VOLATILE AS $$
        DECLARE
          start_shard integer := pg_backend_pid() % ${EMAIL_COUNT_SHARDS};
        BEGIN
          FOR step IN 0..${EMAIL_COUNT_SHARDS - 1} LOOP
            IF pg_try_advisory_xact_lock(hashtext(account), (start_shard + step) % ${EMAIL_COUNT_SHARDS}) THEN
              RETURN (start_shard + step) % ${EMAIL_COUNT_SHARDS};
            END IF;
          END LOOP;
          PERFORM pg_advisory_xact_lock(hashtext(account), start_shard);
          RETURN start_shard;
        END $$`,
    )
    .execute(db);
  // Adds `sign` for every row of the transition table `changed`, one upsert per counter row touched.
  const addRows = (changed: string, sign: string) =>
    `INSERT INTO email_counts (${KEY}, count)
      SELECT account_id, domain_id, is_archived, parse_success, is_read, email_counts_shard(account_id), total
      FROM (SELECT account_id, coalesce(domain_id, '') AS domain_id, is_archived, parse_success, is_read,
              ${sign} count(*) AS total
            FROM ${changed} GROUP BY 1, 2, 3, 4, 5) AS grouped
      ON CONFLICT (${KEY}) DO UPDATE SET count = email_counts.count + excluded.count;`;
  await sql
    .raw(
      `CREATE FUNCTION email_counts_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN ${addRows('new_rows', '')} RETURN NULL; END $$`,
    )
    .execute(db);
  await sql
    .raw(
      `CREATE FUNCTION email_counts_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN ${addRows('old_rows', '-')} RETURN NULL; END $$`,
    )
    .execute(db);
  const addRow = (row: 'NEW' | 'OLD', delta: string) =>
    `INSERT INTO email_counts (${KEY}, count)
      VALUES (${row}.account_id, coalesce(${row}.domain_id, ''), ${row}.is_archived, ${row}.parse_success, ${row}.is_read,
              email_counts_shard(${row}.account_id), ${delta})
      ON CONFLICT (${KEY}) DO UPDATE SET count = email_counts.count + excluded.count;`;
  await sql
    .raw(
      `CREATE FUNCTION email_counts_updated() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN ${addRow('OLD', '-1')} ${addRow('NEW', '1')} RETURN NULL; END $$`,
    )
    .execute(db);
  await sql
    .raw(
      `CREATE TRIGGER email_counts_insert AFTER INSERT ON emails REFERENCING NEW TABLE AS new_rows
        FOR EACH STATEMENT EXECUTE FUNCTION email_counts_inserted()`,
    )
    .execute(db);
  await sql
    .raw(
      `CREATE TRIGGER email_counts_delete AFTER DELETE ON emails REFERENCING OLD TABLE AS old_rows
        FOR EACH STATEMENT EXECUTE FUNCTION email_counts_deleted()`,
    )
    .execute(db);
  const changed = KEY_COLUMNS.map((column) => `OLD.${column} IS DISTINCT FROM NEW.${column}`).join(' OR ');
  await sql
    .raw(
      `CREATE TRIGGER email_counts_update AFTER UPDATE OF ${KEY_COLUMNS.join(', ')} ON emails
        FOR EACH ROW WHEN (${changed}) EXECUTE FUNCTION email_counts_updated()`,
    )
    .execute(db);
}
