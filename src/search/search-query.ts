import { Invalid } from '../core/index.ts';
import { searchWords } from './search-words.ts';

/** The indexed fields a term can be limited to; `any` also reaches the text body. */
export type SearchField = 'any' | 'subject' | 'sender' | 'recipients';

/**
 * Words of one search term. An unquoted single word matches words that start with it (`invo` finds `invoice`);
 * quoted phrases and several-word values (`alice@acme.test`) match whole words, next to each other and in order.
 */
export interface TextTerm {
  field: SearchField;
  /** The value as typed, lower-cased (`to:` compares it with the envelope recipient, see mailConditions). */
  text: string;
  words: string[];
  prefix: boolean;
  negated: boolean;
}

export type SearchFilter =
  /** A positive term with no word to search for (`🎉`, `*`, `to:""`): no email matches it. */
  | { kind: 'nothing' }
  | { kind: 'attachment'; value: boolean }
  | { kind: 'read'; value: boolean }
  | { kind: 'before'; at: string }
  | { kind: 'after'; at: string };

export interface SearchQuery {
  terms: TextTerm[];
  filters: SearchFilter[];
}

const FIELD_OPERATORS: Record<string, SearchField> = { from: 'sender', to: 'recipients', subject: 'subject' };

function parseDate(operator: string, value: string): string {
  const match = value.match(/^(\d{4})[-/](\d{1,2})[-/](\d{1,2})$/);
  const date = match ? new Date(Date.UTC(Number(match[1]), Number(match[2]) - 1, Number(match[3]))) : undefined;
  if (!date || date.getUTCMonth() !== Number(match![2]) - 1) {
    throw new Invalid(`Invalid date in search: ${operator}:${value} (use YYYY-MM-DD)`);
  }
  return date.toISOString();
}

/** Splits the input into terms, keeping quoted phrases (`"a b"`, `from:"a b"`, `-"a b"`) whole. */
function rawTerms(input: string): Array<{ negated: boolean; operator?: string; value: string; quoted: boolean }> {
  const pattern = /(-?)(?:([a-z]+):)?(?:"([^"]*)"?|(\S+))/giy;
  const terms = [];
  let index = 0;
  while (index < input.length) {
    if (/\s/.test(input[index]!)) {
      index++;
      continue;
    }
    pattern.lastIndex = index;
    const match = pattern.exec(input)!;
    index = pattern.lastIndex;
    const [, minus, operator, quoted, bare] = match;
    terms.push({
      negated: minus === '-',
      operator: operator?.toLowerCase(),
      value: quoted ?? bare ?? '',
      quoted: quoted !== undefined,
    });
  }
  return terms;
}

/**
 * The longest search and the most terms it may have. Each term is a condition of the query the database runs (on
 * SQLite, on the event loop), so the thousands an erase's body could carry would hold every request for seconds, and
 * PostgreSQL refuses that many. A person's search is a few words.
 */
const MAX_SEARCH_CHARS = 1_000;
const MAX_SEARCH_TERMS = 50;

/**
 * Parses the `search` parameter: free words, `"quoted phrases"`, `from:`, `to:`, `subject:`, `has:attachment`,
 * `is:read`, `is:unread`, `before:YYYY-MM-DD`, `after:YYYY-MM-DD`, and `-` before any of them to negate it.
 * `before:` is exclusive and `after:` inclusive of the day given (UTC). Unknown `word:` prefixes are free words. A
 * term without a letter or digit (see searchWords) matches no email, and excludes none when negated.
 */
export function parseSearch(input: string): SearchQuery {
  if (input.length > MAX_SEARCH_CHARS) {
    throw new Invalid(`search must be at most ${MAX_SEARCH_CHARS.toLocaleString('en-US')} characters`);
  }
  const raw = rawTerms(input);
  if (raw.length > MAX_SEARCH_TERMS) throw new Invalid(`search must have at most ${MAX_SEARCH_TERMS} terms`);
  const query: SearchQuery = { terms: [], filters: [] };
  for (const term of raw) {
    const { negated, operator, value, quoted } = term;
    if (operator === 'has' && !quoted && /^attachments?$/i.test(value)) {
      query.filters.push({ kind: 'attachment', value: !negated });
      continue;
    }
    if (operator === 'is' && !quoted && /^(read|unread)$/i.test(value)) {
      query.filters.push({ kind: 'read', value: (value.toLowerCase() === 'read') !== negated });
      continue;
    }
    if (operator === 'before' || operator === 'after') {
      const kind = negated ? (operator === 'before' ? 'after' : 'before') : operator;
      query.filters.push({ kind, at: parseDate(operator, value) });
      continue;
    }
    const field = operator ? FIELD_OPERATORS[operator] : 'any';
    const text = field || !operator ? value : `${operator}:${value}`;
    const words = searchWords(text);
    if (words.length === 0) {
      // Nothing to look for: such a term matches no email, so it excludes none when negated.
      if (!negated) query.filters.push({ kind: 'nothing' });
      continue;
    }
    // A value of several words (an address, a dotted name) is taken as typed in full; a single word may be cut short.
    query.terms.push({
      field: field ?? 'any',
      text: text.toLowerCase(),
      words,
      prefix: !quoted && words.length === 1,
      negated,
    });
  }
  return query;
}
