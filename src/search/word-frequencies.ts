import { sql } from 'kysely';
import type { Db } from '../db/index.ts';
import type { TextTerm } from './search-query.ts';

/** How long the statistics are trusted before they are read again (ANALYZE refreshes them far less often). */
const REFRESH_MS = 10 * 60_000;

/**
 * A word in this fraction of emails or more is common: its GIN list is slow to read whole, while a walk of the newest
 * emails meets it every 50.
 */
const COMMON_FRACTION = 0.02;

/**
 * PostgreSQL: which search words are common, from the statistics ANALYZE keeps on `search_vector` (its most common
 * lexemes, about the thousand in the most emails, each with the fraction of emails that hold it). A word that is
 * not among them is rarer than all of them. Searches plan by it (see MailService and textConditions).
 */
export class WordFrequencies {
  readonly #db: Db;
  #fractions = new Map<string, number>();
  #readAt = Number.NEGATIVE_INFINITY;
  #reading: Promise<void> | undefined;

  constructor(db: Db) {
    this.#db = db;
  }

  /** Whether every word of the term is common (a prefix counts the known words it starts). */
  isCommon(term: TextTerm): boolean {
    return term.words.every(
      (word, i) => this.#fraction(word, term.prefix && i === term.words.length - 1) >= COMMON_FRACTION,
    );
  }

  #fraction(word: string, prefix: boolean): number {
    if (!prefix) return this.#fractions.get(word) ?? 0;
    let sum = 0;
    for (const [known, fraction] of this.#fractions) if (known.startsWith(word)) sum += fraction;
    return sum;
  }

  /** Waits for the first read of the statistics; a later one, once they are stale, runs in the background. */
  async refresh(): Promise<void> {
    if (Date.now() - this.#readAt < REFRESH_MS) return;
    const first = this.#readAt === Number.NEGATIVE_INFINITY;
    this.#reading ??= this.#read().finally(() => {
      this.#reading = undefined;
    });
    if (first) await this.#reading;
  }

  async #read(): Promise<void> {
    try {
      const { rows } = await sql<{ words: string[] | null; fractions: number[] | null }>`
        select most_common_elems::text::text[] as words, most_common_elem_freqs as fractions
        from pg_stats
        where schemaname = current_schema() and tablename = 'emails' and attname = 'search_vector'`.execute(this.#db);
      const { words, fractions } = rows[0] ?? { words: null, fractions: null };
      this.#fractions = new Map((words ?? []).map((word, i) => [word, fractions?.[i] ?? 0]));
    } catch {
      // Without statistics every word counts as rare, which leaves each plan to PostgreSQL.
      this.#fractions = new Map();
    }
    this.#readAt = Date.now();
  }
}
