import { type Kysely, sql } from 'kysely';
import { onPostgres } from '../dialect.ts';

/**
 * PostgreSQL: the version of the search word rule the stored search vectors were built by (see
 * src/search/search-words.ts), so that a process of a newer rule builds the vectors it changes again at start. The
 * vectors stored until now are of version 1. SQLite's search file records its version itself.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  if (!onPostgres(db)) return;
  await sql`CREATE TABLE search_word_rule (version integer NOT NULL)`.execute(db);
  await sql`INSERT INTO search_word_rule (version) VALUES (1)`.execute(db);
}
