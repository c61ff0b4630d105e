import { type Kysely, sql } from 'kysely';
import { onPostgres } from '../dialect.ts';

/**
 * PostgreSQL: the vector the database computes for a row inserted without one, or whose indexed fields an UPDATE
 * changes (migration 0015's function), sets each Han, Hiragana and Katakana character apart as a word, as the search
 * word rule now does (see src/search/search-words.ts); otherwise such a row's Chinese or Japanese words could only be
 * found from the start of a run of them. The ranges are the scripts' letters, as near as a database regex can say.
 * SQLite's FTS5 table reads the word rule itself.
 */
const BODY_CHARS = 20_000;

const IDEOGRAPHS = [
  '\\u3005-\\u3007',
  '\\u3021-\\u3029',
  '\\u3031-\\u3035',
  '\\u3038-\\u303b',
  '\\u3041-\\u309f',
  '\\u30a1-\\u30ff',
  '\\u31f0-\\u31ff',
  '\\u3400-\\u4dbf',
  '\\u4e00-\\u9fff',
  '\\uf900-\\ufaff',
  '\\uff66-\\uff9f',
  '\\U0001b000-\\U0001b16f',
  '\\U00020000-\\U0003134f',
].join('');

const words = (text: string, weight: string) =>
  `setweight(to_tsvector('simple'::regconfig, regexp_replace(regexp_replace(lower(${text}), '[^[:alnum:]]+', ' ', 'g'), '([${IDEOGRAPHS}])', ' \\1 ', 'g')), '${weight}')`;
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

export async function up(db: Kysely<unknown>): Promise<void> {
  if (!onPostgres(db)) return;
  await sql
    .raw(
      `CREATE OR REPLACE FUNCTION emails_search_vector() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN NEW.search_vector := ${vector}; RETURN NEW; END $$`,
    )
    .execute(db);
}
