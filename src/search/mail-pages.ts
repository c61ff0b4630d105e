import type { Expression, ExpressionBuilder, SqlBool } from 'kysely';
import type { Database, Db } from '../db/index.ts';
import type { MailFilter } from './mail-filters.ts';

/** How many matches a list narrowed through the search index counts before it stops (see MailPages.find). */
export const COUNT_LIMIT = 1_000;

export interface Page {
  limit: number;
  offset: number;
}

/** A page's ids, one more than its limit when there are more, and the list's total. */
export interface FoundPage {
  pageIds: string[];
  /** Exact, or COUNT_LIMIT when a search matched more (then `totalIsExact` is false). */
  total: number;
  totalIsExact: boolean;
}

export type EmailConditions = (eb: ExpressionBuilder<Database, 'emails'>) => Expression<SqlBool>[];

/**
 * Which of an account's emails a list of mail shows, found the way each database finds them best (see
 * SqliteMailPages and PostgresMailPages).
 */
export interface MailPages {
  /**
   * A page of the filter's emails, newest first. A search of words or an address counts at most COUNT_LIMIT
   * matches, so a broad search costs the same as a narrow one; other lists count exactly, from the kept counts
   * where the filter allows (hasStoredCount).
   */
  find(accountId: string, filter: MailFilter, now: number, page: Page): Promise<FoundPage>;
  /**
   * The database's plan for the query that finds the first page, one line per row, in the form `find` would choose
   * for it (it runs the count that decides): shows whether a search reads the full-text index. `connection` lets a
   * caller explain on a session whose planner settings it chose.
   */
  explain(accountId: string, filter: MailFilter, now: number, connection?: Db): Promise<string[]>;
  /** The filter's conditions, for a query of the caller's own on `emails`; the index is ready for them first. */
  conditions(accountId: string, filter: MailFilter, now: number): Promise<EmailConditions>;
}
