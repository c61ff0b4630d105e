import { type Kysely, sql } from 'kysely';
import { onPostgres } from '../dialect.ts';

/**
 * PostgreSQL: keep an email row, and so its `search_vector`, in the table itself up to the largest size a page
 * holds. At the default 2 kB target a typical row (about 2.5 kB) had its search vector moved to the TOAST table,
 * and every search that tests emails one by one (the newest-first walk, the GIN recheck) paid a TOAST lookup per
 * email, about four times the cost of the test itself. Only rows written from now on are affected; `VACUUM FULL
 * emails` rewrites older ones the same way (it locks the table while it runs). SQLite keeps its index apart.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  if (!onPostgres(db)) return;
  await sql`ALTER TABLE emails SET (toast_tuple_target = 8160)`.execute(db);
}
