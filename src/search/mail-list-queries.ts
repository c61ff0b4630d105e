import { type Compilable, CompiledQuery, sql } from 'kysely';
import { type Db, toFlag } from '../db/index.ts';
import {
  type ConditionSet,
  hasCheaperSubset,
  hasStoredCount,
  type MailFilter,
  mailConditions,
  searchesWords,
} from './mail-filters.ts';
import { COUNT_LIMIT, type Page } from './mail-pages.ts';
import type { IsCommonTerm, SqlDialect, SqlitePlan } from './search-sql.ts';

/** The queries both databases' MailPages share: the filter's emails, their count, and a plain page of them. */
export class MailListQueries {
  readonly #db: Db;
  readonly #dialect: SqlDialect;
  readonly #isCommon: IsCommonTerm | undefined;

  constructor(db: Db, dialect: SqlDialect, isCommon?: IsCommonTerm) {
    this.#db = db;
    this.#dialect = dialect;
    this.#isCommon = isCommon;
  }

  matching(accountId: string, filter: MailFilter, now: number, plan: SqlitePlan, set: ConditionSet = 'all') {
    return this.#db
      .selectFrom('emails')
      .where((eb) =>
        eb.and(mailConditions(this.#dialect, accountId, filter, now, { plan, set, isCommon: this.#isCommon })(eb)),
      );
  }

  /** The page's ids, newest first, one more than the limit. */
  page(accountId: string, filter: MailFilter, now: number, plan: SqlitePlan, page: Page) {
    return this.matching(accountId, filter, now, plan)
      .select('emails.id as id')
      .orderBy('emails.received_at', 'desc')
      .orderBy('emails.id', 'desc')
      .limit(page.limit + 1)
      .offset(page.offset);
  }

  /**
   * The list's total: a search of words counts up to COUNT_LIMIT matches (newest first when `newestFirst`), and
   * other lists count exactly.
   */
  async count(
    accountId: string,
    filter: MailFilter,
    now: number,
    { db = this.#db, newestFirst = false }: { db?: Db; newestFirst?: boolean } = {},
  ): Promise<{ total: number; totalIsExact: boolean }> {
    if (searchesWords(filter)) {
      const countUpToLimit = async (set: 'all' | 'subset') => {
        const matches = this.matching(accountId, filter, now, 'matches-first', set).select('emails.id');
        const counted = await db
          .selectFrom(
            (newestFirst && set === 'all' ? matches.orderBy('emails.received_at', 'desc') : matches)
              .limit(COUNT_LIMIT + 1)
              .as('matches'),
          )
          .select((eb) => eb.fn.countAll().as('total'))
          .executeTakeFirstOrThrow();
        return Number(counted.total);
      };
      // A broad search usually has more than COUNT_LIMIT matches in a subset that is far cheaper to find.
      const total =
        hasCheaperSubset(filter) && (await countUpToLimit('subset')) > COUNT_LIMIT
          ? COUNT_LIMIT + 1
          : await countUpToLimit('all');
      return { total: Math.min(total, COUNT_LIMIT), totalIsExact: total <= COUNT_LIMIT };
    }
    if (hasStoredCount(filter)) return { total: await this.#storedCount(accountId, filter), totalIsExact: true };
    const counted = await db
      .selectFrom(this.matching(accountId, filter, now, 'matches-first').select('emails.id').as('listed'))
      .select((eb) => eb.fn.countAll().as('total'))
      .executeTakeFirstOrThrow();
    return { total: Number(counted.total), totalIsExact: true };
  }

  /** The exact total of a filter that hasStoredCount accepts, summed from email_counts. */
  async #storedCount(accountId: string, filter: MailFilter): Promise<number> {
    if (filter.domainIds?.length === 0) return 0;
    const archived = filter.archived ?? 'exclude';
    let query = this.#db
      .selectFrom('email_counts')
      .select(sql<string | number | null>`sum(count)`.as('total'))
      .where('account_id', '=', accountId);
    if (archived !== 'include') query = query.where('is_archived', '=', toFlag(archived === 'only'));
    if (filter.parseSuccess !== undefined) query = query.where('parse_success', '=', toFlag(filter.parseSuccess));
    if (filter.isRead !== undefined) query = query.where('is_read', '=', toFlag(filter.isRead));
    if (filter.domainIds) query = query.where('domain_id', 'in', filter.domainIds);
    const row = await query.executeTakeFirstOrThrow();
    return Number(row.total ?? 0);
  }
}

/** The plan of `query` as `explain` (EXPLAIN QUERY PLAN on SQLite, EXPLAIN on PostgreSQL) prints it, a line a row. */
export async function explainQuery(connection: Db, explain: string, query: Compilable): Promise<string[]> {
  const compiled = query.compile();
  const result = await connection.executeQuery<Record<string, unknown>>(
    CompiledQuery.raw(explain + compiled.sql, [...compiled.parameters]),
  );
  return result.rows.map((row) => String(row.detail ?? row['QUERY PLAN']));
}
