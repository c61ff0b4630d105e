import { type Kysely, sql } from 'kysely';
import { onPostgres } from '../dialect.ts';

/**
 * The mail search index. Both databases index the same four fields the same way, so a query returns the same
 * emails on either:
 * - subject; sender (`from_name from_address`); recipients (envelope recipient and the To, Cc and Bcc header
 *   texts); body (the first BODY_CHARS characters of the text body);
 * - words are maximal runs of letters and digits, lower-cased, with no stemming, stop words or accent folding.
 *
 * SQLite: a contentless FTS5 table keyed by `emails.rowid` (VACUUM keeps the rowids of this table: SQLite copies
 * it with its transfer optimisation), kept in step by triggers. PostgreSQL: a generated `tsvector` column with the
 * fields as weights A to D and a GIN index. Matching PostgreSQL's word rule to FTS5's `unicode61` needs the
 * database's ctype to know Unicode letters (C.UTF-8 or any *.UTF-8 locale; plain `C` only knows ASCII).
 */
const BODY_CHARS = 20_000;

const sqliteJsonText = (column: string) =>
  `coalesce(CASE WHEN json_valid(new.${column}) THEN json_extract(new.${column}, '$.text') END, '')`;

const sqliteFields = `
  coalesce(new.subject, ''),
  coalesce(new.from_name, '') || ' ' || coalesce(new.from_address, ''),
  new.recipient || ' ' || ${sqliteJsonText('to_json')} || ' ' || ${sqliteJsonText('cc_json')} || ' ' || ${sqliteJsonText('bcc_json')},
  substr(coalesce(new.text_body, ''), 1, ${BODY_CHARS})`;

const pgWords = (text: string, weight: string) =>
  `setweight(to_tsvector('simple'::regconfig, regexp_replace(lower(${text}), '[^[:alnum:]]+', ' ', 'g')), '${weight}')`;
const pgJsonText = (column: string) => `coalesce((${column}::json ->> 'text'), '')`;

const pgVector = [
  pgWords(`coalesce(subject, '')`, 'A'),
  pgWords(`coalesce(from_name, '') || ' ' || coalesce(from_address, '')`, 'B'),
  pgWords(
    `recipient || ' ' || ${pgJsonText('to_json')} || ' ' || ${pgJsonText('cc_json')} || ' ' || ${pgJsonText('bcc_json')}`,
    'C',
  ),
  pgWords(`left(coalesce(text_body, ''), ${BODY_CHARS})`, 'D'),
].join(' || ');

export async function up(db: Kysely<unknown>): Promise<void> {
  // The default list (the account's unarchived mail, newest first) and its count read only this index.
  await db.schema
    .createIndex('emails_account_archived_received')
    .on('emails')
    .columns(['account_id', 'is_archived', 'received_at'])
    .execute();
  // Lists filter and count by domain (the domain filter, uniqueDomains and the domain's stats).
  await db.schema
    .createIndex('emails_account_domain_received')
    .on('emails')
    .columns(['account_id', 'domain_id', 'is_archived', 'received_at'])
    .execute();

  if (onPostgres(db)) {
    await sql
      .raw(`ALTER TABLE emails ADD COLUMN search_vector tsvector GENERATED ALWAYS AS (${pgVector}) STORED`)
      .execute(db);
    await sql.raw('CREATE INDEX emails_search ON emails USING gin (search_vector)').execute(db);
    return;
  }

  await sql
    .raw(
      `CREATE VIRTUAL TABLE emails_fts USING fts5(subject, sender, recipients, body,
        content='', contentless_delete=1, tokenize='unicode61 remove_diacritics 0')`,
    )
    .execute(db);
  const insert = `INSERT INTO emails_fts(rowid, subject, sender, recipients, body) VALUES (new.rowid, ${sqliteFields});`;
  await sql.raw(`CREATE TRIGGER emails_fts_insert AFTER INSERT ON emails BEGIN ${insert} END`).execute(db);
  await sql
    .raw(
      'CREATE TRIGGER emails_fts_delete AFTER DELETE ON emails BEGIN DELETE FROM emails_fts WHERE rowid = old.rowid; END',
    )
    .execute(db);
  await sql
    .raw(
      `CREATE TRIGGER emails_fts_update
        AFTER UPDATE OF subject, from_name, from_address, recipient, to_json, cc_json, bcc_json, text_body ON emails
        BEGIN DELETE FROM emails_fts WHERE rowid = old.rowid; ${insert} END`,
    )
    .execute(db);
  await sql
    .raw(
      `INSERT INTO emails_fts(rowid, subject, sender, recipients, body)
        SELECT new.rowid, ${sqliteFields} FROM emails AS new`,
    )
    .execute(db);
}
