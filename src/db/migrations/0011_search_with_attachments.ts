import { type Kysely, sql } from 'kysely';
import { onPostgres } from '../dialect.ts';

/**
 * PostgreSQL: the search index again, over the emails with attachments only, for `word has:attachment`. With the
 * full index the planner ANDs a word's GIN list with the attachment index, both read whole; this one holds only the
 * emails with attachments, so the word's list in it is that much shorter. SQLite's FTS5 plans start from the word's
 * matches and look each email up, which needs nothing new.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  if (!onPostgres(db)) return;
  await sql`CREATE INDEX emails_search_with_attachments ON emails USING gin (search_vector) WHERE attachment_count > 0`.execute(
    db,
  );
}
