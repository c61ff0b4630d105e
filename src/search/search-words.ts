/**
 * The search index's word rule, on both databases and for both sides of a search: runs of letters, marks, digits
 * and private-use characters, after Unicode's compatibility normalization (NFKC: `ﬁ` is `fi`, `ＡＢＣ` is `abc`, `µ`
 * is `μ`) and lower-casing, with `ß` as `ss` and a final `ς` as `σ`, as case folding has them. Marks belong to their
 * word, so a Devanagari or Thai word is one word, not the letters between its vowel signs. Chinese and Japanese
 * are written without spaces between words, so each Han, Hiragana or Katakana character is a word of its own: a run
 * of them was one word, and `天気` in `東京の天気予報` could not be found; a search of several such characters finds
 * them next to each other and in order. Searches split their terms with it, and both indexes are built of its words
 * (see postgresSearchVectors and attachSearchDatabase).
 */
const WORD_CHARACTERS = String.raw`\p{L}\p{M}\p{N}\p{Co}`;
const IDEOGRAPHIC = String.raw`\p{scx=Han}\p{scx=Hiragana}\p{scx=Katakana}`;
const WORDS = new RegExp(`[${IDEOGRAPHIC}]|[[${WORD_CHARACTERS}]--[${IDEOGRAPHIC}]]+`, 'gv');
const SEPARATORS = new RegExp(`[^${WORD_CHARACTERS}]+`, 'gu');
/** Each ideographic character, to be set apart by spaces; tested first, as most text has none. */
const IDEOGRAPHS = new RegExp(`[${IDEOGRAPHIC}]`, 'u');
const EACH_IDEOGRAPH = new RegExp(`[${IDEOGRAPHIC}]`, 'gu');

/**
 * The rule's version, which each index records: one built by another version is built again (the SQLite search
 * file's `user_version`, PostgreSQL's `search_word_rule`). Raise it with any change to the rule.
 */
export const WORD_RULE_VERSION = 3;

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
  const words = folded(text).replace(SEPARATORS, ' ');
  return IDEOGRAPHS.test(words) ? words.replace(EACH_IDEOGRAPH, ' $& ') : words;
}

/**
 * How much of each indexed field (the subject, the sender, the recipients, the text body) either database's index
 * holds, in characters (as migration 0005 had it for the body). A hostile message's subject or To can be megabytes,
 * and PostgreSQL refuses a vector past 1 MB, which would refuse the message with it.
 */
export const SEARCH_FIELD_CHARS = 20_000;
