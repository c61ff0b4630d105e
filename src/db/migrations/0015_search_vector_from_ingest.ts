import { type Kysely, sql } from 'kysely';
import { onPostgres } from '../dialect.ts';

/**
 * PostgreSQL: `emails.search_vector` stops being a generated column. Ingest writes it with the row, built with the
 * search word rule itself (see postgresSearchVectors): computed by the database, its regular expression and text
 * parser were most of what storing an email cost there (see docs/internals.md, Reading mail). The vectors already
 * stored stay as they are.
 *
 * A row inserted without one (by hand, by a process of an earlier version while a newer one has migrated) still
 * gets its vector, from migration 0005's expression, and so does a row whose indexed fields are changed by an
 * UPDATE, as the generated column did. SQLite is unchanged: its FTS5 table reads the columns itself.
 */
const BODY_CHARS = 20_000;

const words = (text: string, weight: string) =>
  `setweight(to_tsvector('simple'::regconfig, regexp_replace(lower(${text}), '[^[:alnum:]]+', ' ', 'g')), '${weight}')`;
const jsonText = (column: string) => `coalesce((NEW.${column}::json ->> 'text'), '')`;

const vector = [
  words(`coalesce(NEW.subject, '')`, 'A'),
  words(`coalesce(NEW.from_name, '') || ' ' || coalesce(NEW.from_address, '')`, 'B'),
  words(
    `NEW.recipient || ' ' || ${jsonText('to_json')} || ' ' || ${jsonText('cc_json')} || ' ' || ${jsonText('bcc_json')}`,
    'C',
  ),
  words(`left(coalesce(NEW.text_body, ''), ${BODY_CHARS})`, 'D'),
].join(' || ');

const INDEXED_COLUMNS = [
  'subject',
  'from_name',
  'from_address',
  'recipient',
  'to_json',
  'cc_json',
  'bcc_json',
  'text_body',
];

export async function up(db: Kysely<unknown>): Promise<void> {
  if (!onPostgres(db)) return;
  await sql`ALTER TABLE emails ALTER COLUMN search_vector DROP EXPRESSION`.execute(db);
  await sql
    .raw(
      `CREATE FUNCTION emails_search_vector() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN NEW.search_vector := ${vector}; RETURN NEW; END $$`,
    )
    .execute(db);
  await sql
    .raw(
      `CREATE TRIGGER emails_search_vector_missing BEFORE INSERT ON emails
        FOR EACH ROW WHEN (NEW.search_vector IS NULL) EXECUTE FUNCTION emails_search_vector()`,
    )
    .execute(db);
  await sql
    .raw(
      `CREATE TRIGGER emails_search_vector_changed BEFORE UPDATE OF ${INDEXED_COLUMNS.join(', ')} ON emails
        FOR EACH ROW EXECUTE FUNCTION emails_search_vector()`,
    )
    .execute(db);
}
