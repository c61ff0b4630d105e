import { type SqlBool, sql } from 'kysely';
import type { Db } from '../db/index.ts';
import { earliestReceivedAt, ftsMatchOf, type MailFilter, mailConditions, searchesWords } from './mail-filters.ts';
import { explainQuery, MailListQueries } from './mail-list-queries.ts';
import { COUNT_LIMIT, type EmailConditions, type FoundPage, type MailPages, type Page } from './mail-pages.ts';
import { catchUpSearchIndex } from './sqlite-search-index.ts';

/**
 * SQLite's lists: a search through the index takes its matches straight out of FTS5 (`fts-joined`); any other list
 * counts first, and reads its page from the matches (`matches-first`) or, past COUNT_LIMIT of them, by walking the
 * newest emails (`newest-first`).
 */
export class SqliteMailPages implements MailPages {
  readonly #db: Db;
  readonly #queries: MailListQueries;

  constructor(db: Db) {
    this.#db = db;
    this.#queries = new MailListQueries(db, 'sqlite');
  }

  async find(accountId: string, filter: MailFilter, now: number, page: Page): Promise<FoundPage> {
    await this.#catchUp(filter);
    const match = ftsMatchOf(filter);
    return match === undefined
      ? await this.#findPage(accountId, filter, now, page)
      : await this.#findMatches(accountId, filter, match, now, page);
  }

  async explain(accountId: string, filter: MailFilter, now: number, connection: Db = this.#db): Promise<string[]> {
    const match = ftsMatchOf(filter);
    const query =
      match === undefined
        ? this.#queries.page(
            accountId,
            filter,
            now,
            (await this.#queries.count(accountId, filter, now, { db: connection })).totalIsExact
              ? 'matches-first'
              : 'newest-first',
            { limit: 50, offset: 0 },
          )
        : this.#matches(
            accountId,
            filter,
            match,
            now,
            (await this.#rowidFloor(accountId, filter, now, connection)) ?? undefined,
            COUNT_LIMIT + 1,
          );
    return explainQuery(connection, 'explain query plan ', query);
  }

  async conditions(accountId: string, filter: MailFilter, now: number): Promise<EmailConditions> {
    await this.#catchUp(filter);
    return mailConditions('sqlite', accountId, filter, now);
  }

  /** Before a list that searches words, indexes the emails still queued, so it finds every email stored before. */
  async #catchUp(filter: MailFilter): Promise<void> {
    if (searchesWords(filter)) await catchUpSearchIndex(this.#db);
  }

  /**
   * The page's ids (one more than the limit, to tell hasMore) and the total, for a list that does not search through
   * the index. Many matches: walking the newest emails finds a page sooner than sorting every match.
   */
  async #findPage(accountId: string, filter: MailFilter, now: number, page: Page): Promise<FoundPage> {
    const { total, totalIsExact } = await this.#queries.count(accountId, filter, now);
    const plan = totalIsExact ? 'matches-first' : 'newest-first';
    const rows = await this.#queries.page(accountId, filter, now, plan, page).execute();
    return { pageIds: rows.map((row) => row.id), total, totalIsExact };
  }

  /**
   * A search through the index: one pass takes the matches out of FTS5 highest rowid first, which stops as soon as
   * it has COUNT_LIMIT + 1 (or the page's depth) and so never reads a common word's whole list, and counts them.
   * Fewer than that are every match, sorted here. Otherwise the newest page among them is the real one unless an
   * email with a lower rowid than all of them was received as late as the page's last (rowids follow arrival, so
   * only mail stored out of order); then the newest emails are walked instead.
   */
  async #findMatches(
    accountId: string,
    filter: MailFilter,
    match: string,
    now: number,
    page: Page,
  ): Promise<FoundPage> {
    const depth = page.offset + page.limit + 1;
    const wanted = Math.max(COUNT_LIMIT + 1, depth);
    const floor = await this.#rowidFloor(accountId, filter, now);
    if (floor === null) return { pageIds: [], total: 0, totalIsExact: true };
    const matches = await this.#matches(accountId, filter, match, now, floor, wanted).execute();
    const total = Math.min(matches.length, COUNT_LIMIT);
    const totalIsExact = matches.length <= COUNT_LIMIT;
    // The list's order (received_at, then id, both descending); both are ASCII, so this compares as SQLite does.
    const newest = matches.toSorted((a, b) =>
      a.received_at === b.received_at ? (a.id < b.id ? 1 : -1) : a.received_at < b.received_at ? 1 : -1,
    );
    if (matches.length === wanted) {
      const straggler = await this.#db
        .selectFrom('emails')
        .select('emails.id')
        .where('emails.account_id', '=', accountId)
        .where('emails.received_at', '>=', newest[depth - 1]!.received_at)
        .where(sql<SqlBool>`emails.rowid < ${matches.at(-1)!.rowid}`)
        .limit(1)
        .executeTakeFirst();
      if (straggler) {
        const pageIds = await this.#queries.page(accountId, filter, now, 'newest-first', page).execute();
        return { pageIds: pageIds.map((row) => row.id), total, totalIsExact };
      }
    }
    return { pageIds: newest.slice(page.offset, depth).map((row) => row.id), total, totalIsExact };
  }

  /**
   * The lowest rowid the filter's time window can hold (rowids below the account's first email of the window cannot
   * match, so FTS5 seeks past them): undefined without a window, null when the window is empty.
   */
  async #rowidFloor(
    accountId: string,
    filter: MailFilter,
    now: number,
    db: Db = this.#db,
  ): Promise<number | null | undefined> {
    const since = earliestReceivedAt(filter, now);
    if (since === undefined) return undefined;
    const row = await db
      .selectFrom('emails')
      .select(sql<number | null>`min(emails.rowid)`.as('rowid'))
      .where('emails.account_id', '=', accountId)
      .where('emails.received_at', '>=', since)
      .executeTakeFirstOrThrow();
    return row.rowid;
  }

  /** The `fts-joined` plan: the filter's matches, highest rowid first, straight out of FTS5. */
  #matches(
    accountId: string,
    filter: MailFilter,
    match: string,
    now: number,
    floor: number | undefined,
    wanted: number,
  ) {
    return this.#db
      .selectFrom('emails')
      .innerJoin(sql<{ rowid: number }>`emails_fts`.as('emails_fts'), (join) =>
        join.on(sql<SqlBool>`emails_fts.rowid = emails.rowid`),
      )
      .select(['emails.id', 'emails.received_at', sql<number>`emails.rowid`.as('rowid')])
      .where(sql<SqlBool>`emails_fts match ${match}`)
      .$if(floor !== undefined, (query) => query.where(sql<SqlBool>`emails_fts.rowid >= ${floor}`))
      .where((eb) => eb.and(mailConditions('sqlite', accountId, filter, now, { plan: 'fts-joined' })(eb)))
      .orderBy(sql`emails_fts.rowid`, 'desc')
      .limit(wanted);
  }
}
