/**
 * The search index's word rule, on both databases and for both sides of a search: runs of letters, digits and
 * private-use characters, lower-cased. Searches split their terms with it, and both indexes are built of its words
 * (see postgresSearchVectors and attachSearchDatabase).
 */
const WORD_CHARACTERS = String.raw`\p{L}\p{N}\p{Co}`;
const WORDS = new RegExp(`[${WORD_CHARACTERS}]+`, 'gu');
const SEPARATORS = new RegExp(`[^${WORD_CHARACTERS}]+`, 'gu');

export function searchWords(text: string): string[] {
  // Matching the runs is cheaper than splitting at what separates them.
  return text.toLowerCase().match(WORDS) ?? [];
}

/** The text's words in order, separated by single spaces (and perhaps one at either end): SQLite's index reads it. */
export function searchText(text: string): string {
  // Cheaper than joining searchWords' array, which costs as much again as the match.
  return text.toLowerCase().replace(SEPARATORS, ' ');
}

/** How much of a text body either database's index holds, in characters (as in migration 0005). */
export const SEARCH_BODY_CHARS = 20_000;
