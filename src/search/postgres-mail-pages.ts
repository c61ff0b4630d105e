import { sql } from 'kysely';
import type { Db } from '../db/index.ts';
import { type MailFilter, mailConditions, searchesWords } from './mail-filters.ts';
import { explainQuery, MailListQueries } from './mail-list-queries.ts';
import type { EmailConditions, FoundPage, MailPages, Page } from './mail-pages.ts';
import { parseSearch, type TextTerm } from './search-query.ts';
import { WordFrequencies } from './word-frequencies.ts';

/**
 * How a page is read: `matches-first` (a list without a search of words), `sorted-matches` (few matches: every GIN
 * match, sorted) or `recent-walk` (many matches: the newest RECENT_WALK_EMAILS emails, tested one by one until the
 * page is full).
 */
type PageForm = 'matches-first' | 'sorted-matches' | 'recent-walk';

/**
 * How many of the newest emails a `recent-walk` page tests before it gives up and sorts every match instead. A
 * search with more than COUNT_LIMIT matches nearly always fills a page well within them, and testing an email is
 * cheap. PostgreSQL, whose estimates for phrases and prefixes are far off, would otherwise sort thousands of GIN
 * matches spread over the whole table, or walk the whole table for a phrase it believes rare.
 */
const RECENT_WALK_EMAILS = 20_000;

/** The columns an address condition reads (see mailConditions), which a `recent-walk` then carries. */
const ADDRESS_COLUMNS = [
  'emails.from_address',
  'emails.recipient',
  'emails.to_json',
  'emails.cc_json',
  'emails.bcc_json',
] as const;

/** PostgreSQL's lists: its planner picks the plan, steered by which search words are common (WordFrequencies). */
export class PostgresMailPages implements MailPages {
  readonly #db: Db;
  readonly #wordFrequencies: WordFrequencies;
  readonly #queries: MailListQueries;
  readonly #recentWalkEmails: number;
  readonly #isCommon = (term: TextTerm) => this.#wordFrequencies.isCommon(term);

  /** `recentWalkEmails`: how many of the newest emails a `recent-walk` page tests (default RECENT_WALK_EMAILS). */
  constructor(db: Db, { recentWalkEmails = RECENT_WALK_EMAILS }: { recentWalkEmails?: number } = {}) {
    this.#db = db;
    this.#wordFrequencies = new WordFrequencies(db);
    this.#queries = new MailListQueries(db, 'postgres', this.#isCommon);
    this.#recentWalkEmails = recentWalkEmails;
  }

  async find(accountId: string, filter: MailFilter, now: number, page: Page): Promise<FoundPage> {
    await this.#wordFrequencies.refresh();
    const { total, totalIsExact, form } = await this.#count(accountId, filter, now);
    let rows = await this.#pageQuery(accountId, filter, now, form, page).execute();
    if (form === 'recent-walk' && rows.length <= page.limit) {
      // The walked emails held too few matches to fill the page (or it is the last page).
      rows = await this.#pageQuery(accountId, filter, now, 'sorted-matches', page).execute();
    }
    return { pageIds: rows.map((row) => row.id), total, totalIsExact };
  }

  async explain(accountId: string, filter: MailFilter, now: number, connection: Db = this.#db): Promise<string[]> {
    await this.#wordFrequencies.refresh();
    const { form } = await this.#count(accountId, filter, now, connection);
    return explainQuery(
      connection,
      'explain ',
      this.#pageQuery(accountId, filter, now, form, { limit: 50, offset: 0 }),
    );
  }

  async conditions(accountId: string, filter: MailFilter, now: number): Promise<EmailConditions> {
    return mailConditions('postgres', accountId, filter, now);
  }

  /** The list's total, and the form of page query that suits it. */
  async #count(
    accountId: string,
    filter: MailFilter,
    now: number,
    db: Db = this.#db,
  ): Promise<{ total: number; totalIsExact: boolean; form: PageForm }> {
    const newestFirst = this.#countsNewestFirst(filter);
    const { total, totalIsExact } = await this.#queries.count(accountId, filter, now, { db, newestFirst });
    // Many matches: walking the newest emails finds a page sooner than sorting every match.
    const form = !searchesWords(filter) ? 'matches-first' : totalIsExact ? 'sorted-matches' : 'recent-walk';
    return { total, totalIsExact, form };
  }

  /**
   * Whether a search's count should walk the emails newest first and stop at the limit. It should when every
   * positive term is common: the planner otherwise reads a common word's whole GIN list and ANDs it with the other
   * conditions' (a time window, unread), where a walk finds the limit's matches within a few thousand emails. Rarer
   * words have short lists, and the planner's own plan is the better one; so is it for a `has:attachment` search,
   * whose own GIN index holds a tenth of the emails (migration 0011).
   */
  #countsNewestFirst(filter: MailFilter): boolean {
    if (!filter.search?.trim()) return false;
    const { terms, filters } = parseSearch(filter.search);
    const positive = terms.filter((term) => !term.negated);
    return (
      positive.length > 0 &&
      positive.every((term) => this.#wordFrequencies.isCommon(term)) &&
      !filters.some((condition) => condition.kind === 'attachment' && condition.value)
    );
  }

  /** The page's ids, newest first, one more than the limit. */
  #pageQuery(accountId: string, filter: MailFilter, now: number, form: PageForm, page: Page) {
    if (form === 'recent-walk') {
      // The inner query can only be answered by walking an index newest first (the LIMIT bounds it); the outer one
      // tests each email it yields for the words and stops as soon as the page is full.
      const recent = this.#queries
        .matching(accountId, filter, now, 'matches-first', 'scope')
        .select(['emails.id', 'emails.received_at', sql<string>`emails.search_vector`.as('search_vector')])
        .$if(filter.emailAddress !== undefined, (query) => query.select(ADDRESS_COLUMNS))
        .orderBy('emails.received_at', 'desc')
        .orderBy('emails.id', 'desc')
        .limit(this.#recentWalkEmails);
      // The derived table is named `emails` and carries every column the word conditions read, so they apply to it
      // as written for the table (hence the cast).
      return this.#db
        .selectFrom(recent.as('emails'))
        .where((eb) =>
          eb.and(
            mailConditions('postgres', accountId, filter, now, { set: 'words', isCommon: this.#isCommon })(eb as never),
          ),
        )
        .select('emails.id as id')
        .orderBy('emails.received_at', 'desc')
        .orderBy('emails.id', 'desc')
        .limit(page.limit + 1)
        .offset(page.offset);
    }
    if (form === 'sorted-matches') {
      // OFFSET 0 keeps PostgreSQL from walking the newest emails (its estimate for a rare prefix is far too high):
      // it reads the GIN matches and sorts them instead.
      return this.#db
        .selectFrom(
          this.#queries
            .matching(accountId, filter, now, 'matches-first')
            .select(['emails.id', 'emails.received_at'])
            .offset(0)
            .as('matches'),
        )
        .select('matches.id as id')
        .orderBy('matches.received_at', 'desc')
        .orderBy('matches.id', 'desc')
        .limit(page.limit + 1)
        .offset(page.offset);
    }
    return this.#queries.page(accountId, filter, now, form, page);
  }
}
