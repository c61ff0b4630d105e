/**
 * The search index's word rule, on both databases and for both sides of a search: runs of letters, marks, digits
 * and private-use characters, after Unicode's compatibility normalization (NFKC: `ﬁ` is `fi`, `ＡＢＣ` is `abc`, `µ`
 * is `μ`) and lower-casing, with `ß` as `ss` and a final `ς` as `σ`, as case folding has them. Marks belong to their
 * word, so a Devanagari or Thai word is one word, not the letters between its vowel signs. Searches split their
 * terms with it, and both indexes are built of its words (see postgresSearchVectors and attachSearchDatabase).
 */
const WORD_CHARACTERS = String.raw`\p{L}\p{M}\p{N}\p{Co}`;
const WORDS = new RegExp(`[${WORD_CHARACTERS}]+`, 'gu');
const SEPARATORS = new RegExp(`[^${WORD_CHARACTERS}]+`, 'gu');

/**
 * The rule's version, which each index records: one built by another version is built again (the SQLite search
 * file's `user_version`, PostgreSQL's `search_word_rule`). Raise it with any change to the rule.
 */
export const WORD_RULE_VERSION = 2;

function folded(text: string): string {
  return text
    .normalize('NFKC')
    .toLowerCase()
    .replace(/[ßς]/g, (letter) => (letter === 'ß' ? 'ss' : 'σ'));
}

export function searchWords(text: string): string[] {
  // Matching the runs is cheaper than splitting at what separates them.
  return folded(text).match(WORDS) ?? [];
}

/** The text's words in order, separated by single spaces (and perhaps one at either end): SQLite's index reads it. */
export function searchText(text: string): string {
  // Cheaper than joining searchWords' array, which costs as much again as the match.
  return folded(text).replace(SEPARATORS, ' ');
}

/**
 * How much of each indexed field (the subject, the sender, the recipients, the text body) either database's index
 * holds, in characters (as migration 0005 had it for the body). A hostile message's subject or To can be megabytes,
 * and PostgreSQL refuses a vector past 1 MB, which would refuse the message with it.
 */
export const SEARCH_FIELD_CHARS = 20_000;
