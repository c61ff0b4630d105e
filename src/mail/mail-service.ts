import type { Readable } from 'node:stream';
import { CompiledQuery, type SqlBool, sql } from 'kysely';
import { type Clock, Invalid, isoNow, NotFound } from '../core/index.ts';
import type { Db } from '../db/index.ts';
import { endAfter, indexByName } from './attachment-stream.ts';
import {
  type ConditionSet,
  ftsMatchOf,
  hasCheaperSubset,
  hasStoredCount,
  type MailFilter,
  mailConditions,
  prepareSearch,
  receivedSince,
  searchesWords,
} from './mail-filters.ts';
import { parseSearch, type TextTerm } from './search-query.ts';
import type { SqlDialect, SqlitePlan } from './search-sql.ts';
import {
  type AttachmentInfo,
  EMAIL_COLUMNS,
  type EmailSummary,
  loadThreadMessages,
  PREVIEW_HEADS,
  type StoredEmail,
  SUMMARY_COLUMNS,
  toStoredEmail,
  toSummary,
} from './stored-email.ts';
import { WordFrequencies } from './word-frequencies.ts';

/** Raw messages by blob key (the blob store, seen from here). */
export interface RawMessages {
  get(key: string): Promise<Readable>;
  location(key: string): { bucketName: string; objectKey: string };
}

/** Streams attachment `index` (0-based, in the order of `attachments_json`) out of a raw message; null if absent. */
export type AttachmentExtractor = (raw: Readable, index: number) => Promise<{ stream: Readable } | null>;

export interface MailServiceDeps {
  db: Db;
  dialect: SqlDialect;
  clock: Clock;
  raw: RawMessages;
  extractAttachment: AttachmentExtractor;
  /** PostgreSQL: how many of the newest emails a `recent-walk` page tests (default RECENT_WALK_EMAILS). */
  recentWalkEmails?: number;
}

/** Raw messages up to this size are returned inline as `content.rawContent`; larger ones only through `/raw`. */
export const RAW_CONTENT_MAX_BYTES = 1024 * 1024;
/** How many matches a list narrowed through the search index counts before it stops (see `list`). */
export const COUNT_LIMIT = 1_000;

const ID_PATTERN = /^[A-Za-z0-9_-]{1,128}$/;

export interface MailList {
  emails: EmailSummary[];
  /** Exact, or COUNT_LIMIT when a search matched more (then `totalIsExact` is false). */
  total: number;
  totalIsExact: boolean;
  hasMore: boolean;
}

/**
 * How a page is read: a SqlitePlan, or on PostgreSQL `sorted-matches` (few matches: every GIN match, sorted) or
 * `recent-walk` (many matches: the newest RECENT_WALK_EMAILS emails, tested one by one until the page is full).
 */
type PageForm = SqlitePlan | 'sorted-matches' | 'recent-walk';

/**
 * How many of the newest emails a `recent-walk` page tests before it gives up and sorts every match instead. A
 * search with more than COUNT_LIMIT matches nearly always fills a page well within them (a word in 0.5% of emails
 * within 10,000), and testing an email costs one to two microseconds. PostgreSQL, whose estimates for phrases and
 * prefixes are far off, would otherwise sort thousands of GIN matches spread over the whole table (25-40 ms at a
 * million emails), or walk the whole table for a phrase it believes rare.
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

/** A page's ids, one more than its limit when there are more, and the list's total. */
interface FoundPage {
  pageIds: string[];
  total: number;
  totalIsExact: boolean;
}

export interface EmailDetail {
  email: StoredEmail;
  /** The raw message when it is at most RAW_CONTENT_MAX_BYTES; otherwise omitted. */
  rawContent: string | null;
  rawFetchError: string | null;
  location: { bucketName: string; objectKey: string };
}

/** A change of read and archive state; what is left out stays. */
export interface StateChange {
  isRead?: boolean;
  isArchived?: boolean;
}

export interface ReadState {
  id: string;
  isRead: boolean;
  readAt: string | null;
  isArchived: boolean;
  archivedAt: string | null;
  updatedAt: string;
}

async function readAll(stream: Readable): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

/** Stored mail: lists and search, the single read (which marks it read), read and archive state, threads. */
export class MailService {
  readonly #db: Db;
  readonly #dialect: SqlDialect;
  readonly #clock: Clock;
  readonly #raw: RawMessages;
  readonly #extractAttachment: AttachmentExtractor;
  readonly #wordFrequencies: WordFrequencies | undefined;
  readonly #recentWalkEmails: number;
  readonly #isCommon = (term: TextTerm) => this.#wordFrequencies?.isCommon(term) ?? false;

  constructor(deps: MailServiceDeps) {
    this.#db = deps.db;
    this.#dialect = deps.dialect;
    this.#clock = deps.clock;
    this.#raw = deps.raw;
    this.#extractAttachment = deps.extractAttachment;
    this.#wordFrequencies = deps.dialect === 'postgres' ? new WordFrequencies(deps.db) : undefined;
    this.#recentWalkEmails = deps.recentWalkEmails ?? RECENT_WALK_EMAILS;
  }

  /**
   * Newest first. `emailId` stands for every email of that email's thread. A search of words or an address
   * counts at most COUNT_LIMIT matches (`totalIsExact` is false beyond that), so a broad search costs the
   * same as a narrow one; other lists count exactly, from the kept counts where the filter allows (hasStoredCount).
   */
  async list(
    accountId: string,
    filter: MailFilter & { emailId?: string },
    page: { limit: number; offset: number },
  ): Promise<MailList> {
    const resolved = await this.#resolve(accountId, filter);
    const now = this.#clock.now().getTime();
    await this.#wordFrequencies?.refresh();
    await prepareSearch(this.#db, this.#dialect, resolved);
    const match = this.#dialect === 'sqlite' ? ftsMatchOf(resolved) : undefined;
    const found =
      match === undefined
        ? await this.#findPage(accountId, resolved, now, page)
        : await this.#findSqliteMatches(accountId, resolved, match, now, page);
    const ids = found.pageIds.slice(0, page.limit);
    const rows =
      ids.length === 0
        ? []
        : await this.#db
            .selectFrom('emails')
            .select(SUMMARY_COLUMNS.map((column) => `emails.${column}` as const))
            .select(PREVIEW_HEADS)
            .where('emails.id', 'in', ids)
            .execute();
    const byId = new Map(rows.map((row) => [row.id, row]));
    return {
      emails: ids.map((id) => toSummary(byId.get(id)!)),
      total: found.total,
      totalIsExact: found.totalIsExact,
      hasMore: found.pageIds.length > page.limit,
    };
  }

  /**
   * SQLite, a search through the index: one pass takes the matches out of FTS5 highest rowid first, which stops as
   * soon as it has COUNT_LIMIT + 1 (or the page's depth) and so never reads a common word's whole list, and counts
   * them. Fewer than that are every match, sorted here. Otherwise the newest page among them is the real one unless
   * an email with a lower rowid than all of them was received as late as the page's last (rowids follow arrival, so
   * only mail stored out of order); then the newest emails are walked instead.
   */
  async #findSqliteMatches(
    accountId: string,
    filter: MailFilter,
    match: string,
    now: number,
    page: { limit: number; offset: number },
  ): Promise<FoundPage> {
    const depth = page.offset + page.limit + 1;
    const wanted = Math.max(COUNT_LIMIT + 1, depth);
    const floor = await this.#rowidFloor(accountId, filter, now);
    if (floor === null) return { pageIds: [], total: 0, totalIsExact: true };
    const matches = await this.#sqliteMatches(accountId, filter, match, now, floor, wanted).execute();
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
        const pageIds = await this.#pageQuery(accountId, filter, now, 'newest-first', page).execute();
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
    const since = receivedSince(filter, now);
    if (since === undefined) return undefined;
    const row = await db
      .selectFrom('emails')
      .select(sql<number | null>`min(emails.rowid)`.as('rowid'))
      .where('emails.account_id', '=', accountId)
      .where('emails.received_at', '>=', since)
      .executeTakeFirstOrThrow();
    return row.rowid;
  }

  /** SQLite's `fts-joined` plan: the filter's matches, highest rowid first, straight out of FTS5. */
  #sqliteMatches(
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
      .where((eb) => eb.and(mailConditions(this.#dialect, accountId, filter, now, { plan: 'fts-joined' })(eb)))
      .orderBy(sql`emails_fts.rowid`, 'desc')
      .limit(wanted);
  }

  /** The page's ids (one more than the limit, to tell hasMore) and the total, for any list. */
  async #findPage(
    accountId: string,
    resolved: MailFilter,
    now: number,
    page: { limit: number; offset: number },
  ): Promise<FoundPage> {
    const { total, totalIsExact, form } = await this.#count(accountId, resolved, now);
    let rows = await this.#pageQuery(accountId, resolved, now, form, page).execute();
    if (form === 'recent-walk' && rows.length <= page.limit) {
      // The walked emails held too few matches to fill the page (or it is the last page).
      rows = await this.#pageQuery(accountId, resolved, now, 'sorted-matches', page).execute();
    }
    return { pageIds: rows.map((row) => row.id), total, totalIsExact };
  }

  /** The list's total, and the form of page query that suits it. */
  async #count(
    accountId: string,
    resolved: MailFilter,
    now: number,
    db: Db = this.#db,
  ): Promise<{ total: number; totalIsExact: boolean; form: PageForm }> {
    if (searchesWords(resolved)) {
      const newestFirst = this.#countsNewestFirst(resolved);
      const countUpToLimit = async (set: 'all' | 'subset') => {
        const matches = this.#matching(accountId, resolved, now, 'matches-first', set).select('emails.id');
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
        hasCheaperSubset(resolved) && (await countUpToLimit('subset')) > COUNT_LIMIT
          ? COUNT_LIMIT + 1
          : await countUpToLimit('all');
      const totalIsExact = total <= COUNT_LIMIT;
      return {
        total: Math.min(total, COUNT_LIMIT),
        totalIsExact,
        // Many matches: walking the newest emails finds a page sooner than sorting every match.
        form:
          this.#dialect === 'postgres'
            ? totalIsExact
              ? 'sorted-matches'
              : 'recent-walk'
            : totalIsExact
              ? 'matches-first'
              : 'newest-first',
      };
    }
    if (hasStoredCount(resolved)) {
      return { total: await this.#storedCount(accountId, resolved), totalIsExact: true, form: 'matches-first' };
    }
    const counted = await db
      .selectFrom(this.#matching(accountId, resolved, now, 'matches-first').select('emails.id').as('listed'))
      .select((eb) => eb.fn.countAll().as('total'))
      .executeTakeFirstOrThrow();
    return { total: Number(counted.total), totalIsExact: true, form: 'matches-first' };
  }

  /**
   * PostgreSQL: whether a search's count should walk the emails newest first and stop at the limit. It should when
   * every positive term is common: the planner otherwise reads a common word's whole GIN list (about half a
   * microsecond per email that holds it) and ANDs it with the other conditions' (a time window, unread), where a
   * walk finds the limit's matches within a few thousand emails. Rarer words have short lists, and the planner's own
   * plan is the better one; so is it for a `has:attachment` search, whose own GIN index holds a tenth of the emails
   * (migration 0011).
   */
  #countsNewestFirst(filter: MailFilter): boolean {
    if (!this.#wordFrequencies || !filter.search?.trim()) return false;
    const { terms, filters } = parseSearch(filter.search);
    const positive = terms.filter((term) => !term.negated);
    return (
      positive.length > 0 &&
      positive.every((term) => this.#wordFrequencies!.isCommon(term)) &&
      !filters.some((condition) => condition.kind === 'attachment' && condition.value)
    );
  }

  #matching(accountId: string, filter: MailFilter, now: number, plan: SqlitePlan, set: ConditionSet = 'all') {
    return this.#db
      .selectFrom('emails')
      .where((eb) =>
        eb.and(mailConditions(this.#dialect, accountId, filter, now, { plan, set, isCommon: this.#isCommon })(eb)),
      );
  }

  /** The page's ids, newest first, one more than the limit. */
  #pageQuery(
    accountId: string,
    filter: MailFilter,
    now: number,
    form: PageForm,
    page: { limit: number; offset: number },
  ) {
    if (form === 'recent-walk') {
      // The inner query can only be answered by walking an index newest first (the LIMIT bounds it); the outer one
      // tests each email it yields for the words and stops as soon as the page is full.
      const recent = this.#matching(accountId, filter, now, 'matches-first', 'scope')
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
            mailConditions(this.#dialect, accountId, filter, now, { set: 'words', isCommon: this.#isCommon })(
              eb as never,
            ),
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
          this.#matching(accountId, filter, now, 'matches-first')
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
    return this.#matching(accountId, filter, now, form)
      .select('emails.id as id')
      .orderBy('emails.received_at', 'desc')
      .orderBy('emails.id', 'desc')
      .limit(page.limit + 1)
      .offset(page.offset);
  }

  /** The exact total of a filter that hasStoredCount accepts, summed from email_counts. */
  async #storedCount(accountId: string, filter: MailFilter): Promise<number> {
    if (filter.domainIds?.length === 0) return 0;
    const archived = filter.archived ?? 'exclude';
    let query = this.#db
      .selectFrom('email_counts')
      .select(sql<string | number | null>`sum(count)`.as('total'))
      .where('account_id', '=', accountId);
    if (archived !== 'include') query = query.where('is_archived', '=', archived === 'only' ? 1 : 0);
    if (filter.parseSuccess !== undefined) query = query.where('parse_success', '=', filter.parseSuccess ? 1 : 0);
    if (filter.isRead !== undefined) query = query.where('is_read', '=', filter.isRead ? 1 : 0);
    if (filter.domainIds) query = query.where('domain_id', 'in', filter.domainIds);
    const row = await query.executeTakeFirstOrThrow();
    return Number(row.total ?? 0);
  }

  /**
   * The database's plan for the query that finds a list's first page (EXPLAIN QUERY PLAN on SQLite, EXPLAIN on
   * PostgreSQL), one line per row, in the form `list` would choose for it (it runs the count that decides): shows
   * whether a search reads the full-text index. `connection` lets a caller explain on a session whose planner
   * settings it chose.
   */
  async explainList(
    accountId: string,
    filter: MailFilter & { emailId?: string },
    connection: Db = this.#db,
  ): Promise<string[]> {
    const resolved = await this.#resolve(accountId, filter);
    const now = this.#clock.now().getTime();
    await this.#wordFrequencies?.refresh();
    const page = { limit: 50, offset: 0 };
    const match = this.#dialect === 'sqlite' ? ftsMatchOf(resolved) : undefined;
    const compiled =
      match === undefined
        ? this.#pageQuery(
            accountId,
            resolved,
            now,
            (await this.#count(accountId, resolved, now, connection)).form,
            page,
          ).compile()
        : this.#sqliteMatches(
            accountId,
            resolved,
            match,
            now,
            (await this.#rowidFloor(accountId, resolved, now, connection)) ?? undefined,
            COUNT_LIMIT + 1,
          ).compile();
    const explain = this.#dialect === 'sqlite' ? 'explain query plan ' : 'explain ';
    const result = await connection.executeQuery<Record<string, unknown>>(
      CompiledQuery.raw(explain + compiled.sql, [...compiled.parameters]),
    );
    return result.rows.map((row) => String(row.detail ?? row['QUERY PLAN']));
  }

  async #resolve(accountId: string, filter: MailFilter & { emailId?: string }): Promise<MailFilter> {
    if (filter.emailAddress !== undefined && filter.emailId !== undefined) {
      throw new Invalid('Cannot filter by both emailAddress and emailId at the same time');
    }
    const { emailId, domain, ...rest } = filter;
    const resolved: MailFilter = { ...rest };
    const name = domain?.trim().toLowerCase();
    if (name && name !== 'all') {
      const rows = await this.#db
        .selectFrom('domains')
        .select('id')
        .where('account_id', '=', accountId)
        .where((eb) => eb.or([eb('domain', '=', name), eb('id', '=', domain!.trim())]))
        .execute();
      resolved.domainIds = rows.map((row) => row.id);
    }
    return emailId === undefined ? resolved : { ...resolved, ...(await this.#threadFilter(accountId, emailId)) };
  }

  /** Names of the account's domains that have received mail, for the list's `filters.uniqueDomains`. */
  async uniqueDomains(accountId: string): Promise<string[]> {
    const rows = await this.#db
      .selectFrom('domains')
      .select('domains.domain')
      .where('domains.account_id', '=', accountId)
      .where((eb) =>
        eb.exists(
          eb
            .selectFrom('emails')
            .select(sql.lit(1).as('one'))
            .where('emails.account_id', '=', accountId)
            .whereRef('emails.domain_id', '=', 'domains.id'),
        ),
      )
      .orderBy('domains.domain')
      .execute();
    return rows.map((row) => row.domain);
  }

  /** Emails a domain received in the last 24 hours, 7 days and 30 days. */
  async countsByDomain(accountId: string, domainId: string) {
    const now = this.#clock.now().getTime();
    const since = (days: number) => new Date(now - days * 86_400_000).toISOString();
    const row = await this.#db
      .selectFrom('emails')
      .select([
        sql<string | number>`sum(case when received_at >= ${since(1)} then 1 else 0 end)`.as('last24h'),
        sql<string | number>`sum(case when received_at >= ${since(7)} then 1 else 0 end)`.as('last7d'),
        sql<string | number>`count(*)`.as('last30d'),
      ])
      .where('account_id', '=', accountId)
      .where('domain_id', '=', domainId)
      .where('received_at', '>=', since(30))
      .executeTakeFirstOrThrow();
    return { last24h: Number(row.last24h ?? 0), last7d: Number(row.last7d ?? 0), last30d: Number(row.last30d ?? 0) };
  }

  async #threadFilter(accountId: string, emailId: string): Promise<MailFilter> {
    const row = await this.#db
      .selectFrom('emails')
      .select(['id', 'thread_id'])
      .where('account_id', '=', accountId)
      .where('id', '=', emailId)
      .executeTakeFirst();
    if (!row) return { ids: [] };
    return row.thread_id ? { threadId: row.thread_id, archived: 'include' } : { ids: [row.id], archived: 'include' };
  }

  /** The email, without side effects; NotFound(`notFound`) when it is unknown or another account's. */
  async find(accountId: string, id: string, notFound = 'Email not found'): Promise<StoredEmail> {
    if (!ID_PATTERN.test(id)) throw new NotFound(notFound);
    const row = await this.#db
      .selectFrom('emails')
      .select([...EMAIL_COLUMNS])
      .where('account_id', '=', accountId)
      .where('id', '=', id)
      .executeTakeFirst();
    if (!row) throw new NotFound(notFound);
    return toStoredEmail(row);
  }

  /** The single read: returns the email with its raw message (when small) and marks it read. */
  async read(accountId: string, id: string): Promise<EmailDetail> {
    if (!ID_PATTERN.test(id)) throw new Invalid('Valid email ID is required');
    const email = await this.find(accountId, id);
    if (!email.isRead) {
      const now = isoNow(this.#clock);
      await this.#db
        .updateTable('emails')
        .set({ is_read: 1, read_at: now, updated_at: now })
        .where('id', '=', id)
        .where('account_id', '=', accountId)
        .execute();
      Object.assign(email, { isRead: true, readAt: now, updatedAt: now });
    }
    let rawContent: string | null = null;
    let rawFetchError: string | null = null;
    if (email.rawSize <= RAW_CONTENT_MAX_BYTES) {
      try {
        rawContent = (await readAll(await this.#raw.get(email.rawBlobKey))).toString('utf8');
      } catch (error) {
        rawFetchError = error instanceof Error ? error.message : String(error);
      }
    }
    return { email, rawContent, rawFetchError, location: this.#raw.location(email.rawBlobKey) };
  }

  /** The raw message as received, streamed. */
  async openRaw(accountId: string, id: string): Promise<{ stream: Readable; size: number }> {
    if (!ID_PATTERN.test(id)) throw new Invalid('Valid email ID is required');
    const email = await this.find(accountId, id);
    return { stream: await this.#openBlob(email.rawBlobKey), size: email.rawSize };
  }

  async #openBlob(key: string): Promise<Readable> {
    try {
      return await this.#raw.get(key);
    } catch {
      throw new NotFound('Email content not found');
    }
  }

  /** Sets read and archive state; timestamps follow (set when turned on, cleared when turned off). */
  async update(accountId: string, id: string, change: StateChange): Promise<ReadState> {
    if (!ID_PATTERN.test(id)) throw new Invalid('Valid email ID is required');
    await this.find(accountId, id);
    await this.#apply(accountId, [id], change);
    const [state] = await this.#states(accountId, [id]);
    return state!;
  }

  /** The same for up to BULK_MAX emails; ids of other accounts or unknown ids are skipped. */
  async bulkUpdate(accountId: string, ids: string[], change: StateChange): Promise<ReadState[]> {
    const unique = [...new Set(ids)].filter((id) => ID_PATTERN.test(id));
    if (unique.length === 0) return [];
    await this.#apply(accountId, unique, change);
    return this.#states(accountId, unique);
  }

  async #apply(accountId: string, ids: string[], change: StateChange): Promise<void> {
    const now = isoNow(this.#clock);
    const scoped = () => this.#db.updateTable('emails').where('account_id', '=', accountId).where('id', 'in', ids);
    if (change.isRead !== undefined) {
      const flag = change.isRead ? 1 : 0;
      await scoped()
        .set({ is_read: flag, read_at: change.isRead ? now : null, updated_at: now })
        .where('is_read', '!=', flag)
        .execute();
    }
    if (change.isArchived !== undefined) {
      const flag = change.isArchived ? 1 : 0;
      await scoped()
        .set({ is_archived: flag, archived_at: change.isArchived ? now : null, updated_at: now })
        .where('is_archived', '!=', flag)
        .execute();
    }
  }

  async #states(accountId: string, ids: string[]): Promise<ReadState[]> {
    const rows = await this.#db
      .selectFrom('emails')
      .select(['id', 'is_read', 'read_at', 'is_archived', 'archived_at', 'updated_at'])
      .where('account_id', '=', accountId)
      .where('id', 'in', ids)
      .execute();
    const byId = new Map(rows.map((row) => [row.id, row]));
    return ids.flatMap((id) => {
      const row = byId.get(id);
      if (!row) return [];
      return [
        {
          id,
          isRead: Number(row.is_read) === 1,
          readAt: row.read_at,
          isArchived: Number(row.is_archived) === 1,
          archivedAt: row.archived_at,
          updatedAt: row.updated_at,
        },
      ];
    });
  }

  /** Every email of the email's thread in thread order (just the email when it has no thread). */
  async thread(accountId: string, id: string): Promise<{ threadId: string; messages: StoredEmail[] }> {
    if (!ID_PATTERN.test(id)) throw new Invalid('Valid email ID is required');
    const email = await this.find(accountId, id);
    if (!email.threadId) return { threadId: email.id, messages: [email] };
    return { threadId: email.threadId, messages: await loadThreadMessages(this.#db, accountId, email.threadId) };
  }

  /** `id` as an email, or as a thread (its latest email): what an e2 reply answers. */
  async emailOrThreadLatest(accountId: string, id: string): Promise<StoredEmail> {
    const notFound = 'Email or thread not found';
    if (!ID_PATTERN.test(id)) throw new NotFound(notFound);
    const latest = await this.#db
      .selectFrom('emails')
      .select('id')
      .where('account_id', '=', accountId)
      .where((eb) => eb.or([eb('id', '=', id), eb('thread_id', '=', id)]))
      .orderBy('received_at', 'desc')
      .executeTakeFirst();
    if (!latest) throw new NotFound(notFound);
    return this.find(accountId, latest.id, notFound);
  }

  /**
   * Attachment `selector` of an email: the first one with that filename, or the one at that 0-based index of the
   * email's attachment list. Streams it from the raw message; nothing is held in memory.
   */
  async openAttachment(
    accountId: string,
    emailId: string,
    selector: { filename: string } | { index: number },
  ): Promise<{ attachment: AttachmentInfo; index: number; stream: Readable }> {
    const email = await this.find(accountId, emailId, 'Email not found or access denied');
    if (email.attachments.length === 0) throw new NotFound('No attachments found in this email');
    const index = 'index' in selector ? selector.index : indexByName(email.attachments, selector.filename);
    const attachment = email.attachments[index];
    if (!attachment || index < 0) throw new NotFound('Attachment not found');
    const extracted = await this.#extractAttachment(await this.#openBlob(email.rawBlobKey), index);
    if (!extracted) throw new NotFound('Attachment not found');
    return { attachment, index, stream: endAfter(extracted.stream, attachment.size) };
  }
}
