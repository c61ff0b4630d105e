import { type RawBuilder, type SqlBool, sql } from 'kysely';
import type { SearchField, TextTerm } from './search-query.ts';

export type SqlDialect = 'sqlite' | 'postgres';

/** Fields of the index (see migration 0005): FTS5 column names, and the tsvector weights of PostgreSQL. */
const FTS_COLUMNS: Record<Exclude<SearchField, 'any'>, string> = {
  subject: 'subject',
  sender: 'sender',
  recipients: 'recipients',
};
const PG_WEIGHTS: Record<Exclude<SearchField, 'any'>, string> = { subject: 'A', sender: 'B', recipients: 'C' };
const ALL_WEIGHTS = ['A', 'B', 'C', 'D'];

interface WordMatch {
  fields: SearchField[];
  words: string[];
  prefix: boolean;
}

/** Words only ever hold letters and digits (see searchWords), so they can be quoted without escaping. */
function ftsMatch({ fields, words, prefix }: WordMatch): string {
  const phrase = `${words.map((word) => `"${word}"`).join(' + ')}${prefix ? '*' : ''}`;
  if (fields.includes('any')) return `(${phrase})`;
  return `({${fields.map((field) => FTS_COLUMNS[field as Exclude<SearchField, 'any'>]).join(' ')}} : (${phrase}))`;
}

function pgPhrase(words: string[], prefix: boolean, weight: string): string {
  return words
    .map((word, index) => `'${word}':${index === words.length - 1 && prefix ? '*' : ''}${weight}`)
    .join(' <-> ');
}

/**
 * A tsquery for the words. Each alternative keeps its phrase inside one weight, because PostgreSQL numbers words
 * across the concatenated fields and would otherwise let a phrase run from the end of one field into the next,
 * which FTS5 (one column per field) never does.
 */
function pgMatch({ fields, words, prefix }: WordMatch): string {
  if (fields.includes('any') && words.length === 1) return pgPhrase(words, prefix, '');
  const weights = fields.includes('any')
    ? ALL_WEIGHTS
    : fields.map((field) => PG_WEIGHTS[field as Exclude<SearchField, 'any'>]);
  return `(${weights.map((weight) => `(${pgPhrase(words, prefix, weight)})`).join(' | ')})`;
}

/**
 * How SQLite joins a match to the emails: `scan` reads every match from FTS5 and looks each email up by rowid
 * (best when matches are few); `probe` asks FTS5 about one rowid at a time (best when walking the newest emails of
 * a broad match, or for a negated term). PostgreSQL's planner makes this choice itself.
 */
export type SqliteMatchMode = 'scan' | 'probe';

function indexMatch(
  dialect: SqlDialect,
  matches: WordMatch[],
  join: 'and' | 'or',
  mode: SqliteMatchMode,
): RawBuilder<SqlBool> {
  if (dialect === 'sqlite') {
    const expression = matches.map(ftsMatch).join(join === 'and' ? ' AND ' : ' OR ');
    return mode === 'scan'
      ? sql<SqlBool>`emails.rowid in (select rowid from emails_fts where emails_fts match ${expression})`
      : sql<SqlBool>`exists (select 1 from emails_fts where emails_fts match ${expression} and emails_fts.rowid = emails.rowid)`;
  }
  const query = matches.map(pgMatch).join(join === 'and' ? ' & ' : ' | ');
  return sql<SqlBool>`emails.search_vector @@ to_tsquery('simple', ${query})`;
}

/** The conditions the text terms of a search add: all positive terms match, and no negated one does. */
export function textConditions(dialect: SqlDialect, terms: TextTerm[], mode: SqliteMatchMode): RawBuilder<SqlBool>[] {
  const toMatch = (term: TextTerm): WordMatch => ({ fields: [term.field], words: term.words, prefix: term.prefix });
  const positive = terms.filter((term) => !term.negated).map(toMatch);
  const negative = terms.filter((term) => term.negated).map(toMatch);
  const conditions: RawBuilder<SqlBool>[] = [];
  if (positive.length > 0) conditions.push(indexMatch(dialect, positive, 'and', mode));
  if (negative.length > 0) conditions.push(sql<SqlBool>`not (${indexMatch(dialect, negative, 'or', 'probe')})`);
  return conditions;
}

/** Narrows to emails whose sender or recipients contain the address's words in order (checked exactly after). */
export function addressCondition(dialect: SqlDialect, words: string[], mode: SqliteMatchMode): RawBuilder<SqlBool> {
  return indexMatch(dialect, [{ fields: ['sender', 'recipients'], words, prefix: false }], 'and', mode);
}
