/**
 * The search index's word rule, on both databases and for both sides of a search: runs of letters, digits and
 * private-use characters, lower-cased (FTS5's `unicode61` with its default categories). Searches split their terms
 * with it; PostgreSQL's search vectors are built with it (see postgresSearchVectors).
 */
export function searchWords(text: string): string[] {
  // Matching the runs is cheaper than splitting at what separates them.
  return text.toLowerCase().match(/[\p{L}\p{N}\p{Co}]+/gu) ?? [];
}

/** How much of a text body either database's index holds, in characters (as in migration 0005). */
export const SEARCH_BODY_CHARS = 20_000;
