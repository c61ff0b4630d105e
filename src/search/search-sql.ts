import { type RawBuilder, type SqlBool, sql } from 'kysely';
import { fitsPostgresIndex } from './postgres-search-vectors.ts';
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
 * Which side SQLite starts from: `matches-first` reads the FTS5 matches and looks each email up by rowid (best when
 * matches are few); `newest-first` walks the account's newest emails and keeps those in the match list (best when
 * matches are many, as the page fills after a short walk); `fts-joined` leaves the index out of the conditions
 * because the caller joins `emails_fts` and matches ftsExpression itself. PostgreSQL's planner makes this choice
 * itself.
 */
export type SqlitePlan = 'matches-first' | 'newest-first' | 'fts-joined';

function ftsTerms(positive: WordMatch[], negative: WordMatch[]): string {
  // FTS5 applies NOT while merging its lists, far cheaper than testing each email against the negated words.
  const any = (matches: WordMatch[]) => `(${matches.map(ftsMatch).join(' OR ')})`;
  return positive.length > 0
    ? `(${positive.map(ftsMatch).join(' AND ')})${negative.length > 0 ? ` NOT ${any(negative)}` : ''}`
    : any(negative);
}

function wordMatches(terms: TextTerm[], negated: boolean): WordMatch[] {
  return terms
    .filter((term) => term.negated === negated)
    .map((term) => ({ fields: [term.field], words: term.words, prefix: term.prefix }));
}

const ADDRESS_FIELDS: SearchField[] = ['sender', 'recipients'];

/**
 * One FTS5 expression for a search's text terms and an address's words (see addressCondition), for a query that
 * joins `emails_fts`; there must be a positive term or an address.
 */
export function ftsExpression(terms: TextTerm[], addressWords: string[] | undefined): string {
  const positive = wordMatches(terms, false);
  if (addressWords) positive.push({ fields: ADDRESS_FIELDS, words: addressWords, prefix: false });
  return ftsTerms(positive, wordMatches(terms, true));
}

function inIndex(
  dialect: SqlDialect,
  positive: WordMatch[],
  negative: WordMatch[],
  plan: SqlitePlan,
  commonNegative: WordMatch[] = [],
): RawBuilder<SqlBool> {
  if (dialect === 'sqlite') {
    const expression = ftsTerms(positive, [...negative, ...commonNegative]);
    // Unary + keeps SQLite from driving the query by rowid, so it walks the newest emails instead.
    const rowid = sql.raw(plan === 'newest-first' ? '+emails.rowid' : 'emails.rowid');
    const matching = sql<SqlBool>`${rowid} in (select rowid from emails_fts where emails_fts match ${expression})`;
    return positive.length > 0 ? matching : sql<SqlBool>`not (${matching})`;
  }
  // A word no vector can hold is in no email, so a term with one matches nothing (and a tsquery would refuse it).
  const matchable = (match: WordMatch) => match.words.every(fitsPostgresIndex);
  if (!positive.every(matchable)) return sql<SqlBool>`false`;
  const excluded = negative.filter(matchable);
  const commonExcluded = commonNegative.filter(matchable);
  // The words go in as lexemes, already split and lower-cased by the word rule that built the vectors: to_tsquery
  // would run them through PostgreSQL's own parser, which drops words it does not see as words (`½`, `①`).
  const tsquery = (matches: WordMatch[], join: string) => matches.map(pgMatch).join(join);
  if (positive.length === 0) {
    const all = [...excluded, ...commonExcluded];
    if (all.length === 0) return sql<SqlBool>`true`;
    return sql<SqlBool>`not (emails.search_vector @@ ${tsquery(all, ' | ')}::tsquery)`;
  }
  const negated = excluded.length > 0 ? [`!(${tsquery(excluded, ' | ')})`] : [];
  const matching = sql<SqlBool>`emails.search_vector @@ ${[tsquery(positive, ' & '), ...negated].join(' & ')}::tsquery`;
  if (commonExcluded.length === 0) return matching;
  return sql<SqlBool>`(${matching} and not (emails.search_vector @@ ${tsquery(commonExcluded, ' | ')}::tsquery))`;
}

/**
 * Whether a term's words are common (PostgreSQL, see WordFrequencies). GIN reads the whole list of every word in its
 * condition, negated ones too, so a common negated word is tested on the emails the positive words found instead.
 */
export type IsCommonTerm = (term: TextTerm) => boolean;

/** The condition the text terms of a search add: all positive terms match, and no negated one does. */
export function textConditions(
  dialect: SqlDialect,
  terms: TextTerm[],
  plan: SqlitePlan,
  isCommon: IsCommonTerm = () => false,
): RawBuilder<SqlBool>[] {
  const positive = wordMatches(terms, false);
  const negatedTerms = terms.filter((term) => term.negated);
  if (positive.length + negatedTerms.length === 0 || (dialect === 'sqlite' && plan === 'fts-joined')) return [];
  const common = negatedTerms.filter(isCommon);
  const rare = negatedTerms.filter((term) => !common.includes(term));
  return [inIndex(dialect, positive, wordMatches(rare, true), plan, wordMatches(common, true))];
}

/** Narrows to emails whose sender or recipients contain the address's words in order (checked exactly after). */
export function addressCondition(dialect: SqlDialect, words: string[], plan: SqlitePlan): RawBuilder<SqlBool>[] {
  if (dialect === 'sqlite' && plan === 'fts-joined') return [];
  return [inIndex(dialect, [{ fields: ADDRESS_FIELDS, words, prefix: false }], [], plan)];
}
