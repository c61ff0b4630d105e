import { type Kysely, sql } from 'kysely';
import { onPostgres } from '../dialect.ts';

/**
 * PostgreSQL: compress an email's bodies and headers with lz4, far cheaper to write than pglz (see
 * docs/performance.md), where the server was built with it (PostgreSQL 14 and later; Debian's and the official
 * images are). Only values written from now on are affected; a server without lz4 keeps pglz.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  if (!onPostgres(db)) return;
  const { rows } = await sql<{ lz4: boolean }>`
    SELECT 'lz4' = ANY (enumvals) AS lz4 FROM pg_settings WHERE name = 'default_toast_compression'`.execute(db);
  if (!rows[0]?.lz4) return;
  await sql`
    ALTER TABLE emails
      ALTER COLUMN html_body SET COMPRESSION lz4,
      ALTER COLUMN text_body SET COMPRESSION lz4,
      ALTER COLUMN headers_json SET COMPRESSION lz4`.execute(db);
}
