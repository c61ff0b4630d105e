import { type Expression, type ExpressionBuilder, type SqlBool, sql } from 'kysely';
import { type Database, toFlag } from '../db/index.ts';
import { parseSearch, type TextTerm } from './search-query.ts';
import {
  addressCondition,
  ftsExpression,
  type IsCommonTerm,
  type SqlDialect,
  type SqlitePlan,
  textConditions,
} from './search-sql.ts';
import { searchWords } from './search-words.ts';

export type TimeRange = '1h' | '24h' | '7d' | '30d' | '90d';

const HOUR = 3_600_000;
const TIME_RANGE_MS: Record<TimeRange, number> = {
  '1h': HOUR,
  '24h': 24 * HOUR,
  '7d': 7 * 24 * HOUR,
  '30d': 30 * 24 * HOUR,
  '90d': 90 * 24 * HOUR,
};

/** What a list of received mail can be narrowed by; both API families translate their parameters into this. */
export interface MailFilter {
  search?: string;
  parseSuccess?: boolean;
  isRead?: boolean;
  /** Archived mail is left out unless asked for. */
  archived?: 'exclude' | 'include' | 'only';
  /** Only mail of these domains (their ids, which the planner finds through the domain index). */
  domainIds?: string[];
  /** Received within this window of now; no window when absent. */
  timeRange?: TimeRange;
  /** An address in From, To, Cc, Bcc or the envelope recipient. */
  emailAddress?: string;
  /** Only these ids (a thread resolved by the service). */
  ids?: string[];
  threadId?: string;
}

type EmailsBuilder = ExpressionBuilder<Database, 'emails'>;

function contains(dialect: SqlDialect, column: 'to_json' | 'cc_json' | 'bcc_json', needle: string) {
  const text = sql`lower(coalesce(${sql.ref(`emails.${column}`)}, ''))`;
  return dialect === 'sqlite'
    ? sql<SqlBool>`instr(${text}, ${needle}) > 0`
    : sql<SqlBool>`strpos(${text}, ${needle}) > 0`;
}

/**
 * The address must be one of the email's addresses exactly; the index narrows the rows first, so the exact
 * comparison only runs on the few that share its words.
 */
function addressConditions(
  dialect: SqlDialect,
  eb: EmailsBuilder,
  address: string,
  plan: SqlitePlan,
  subset: boolean,
): Expression<SqlBool>[] {
  const words = searchWords(address);
  if (words.length === 0) return [sql<SqlBool>`1 = 0`];
  // The envelope recipient's words are the start of the indexed recipients, so this alone implies the index match.
  if (subset) return [eb('emails.recipient', '=', address)];
  const needle = JSON.stringify({ address }).slice(1, -1);
  return [
    ...addressCondition(dialect, words, plan),
    eb.or([
      sql<SqlBool>`lower(emails.from_address) = ${address}`,
      eb('emails.recipient', '=', address),
      contains(dialect, 'to_json', needle),
      contains(dialect, 'cc_json', needle),
      contains(dialect, 'bcc_json', needle),
    ]),
  ];
}

/** Whether the filter narrows through the search index (a positive search word or an address). */
function usesSearchIndex(filter: MailFilter): boolean {
  if (filter.emailAddress !== undefined) return true;
  return Boolean(filter.search?.trim()) && parseSearch(filter.search!).terms.some((term) => !term.negated);
}

/**
 * Whether the filter searches words (a search word, negated or not, or an address): its list counts at most
 * COUNT_LIMIT matches. A list of every email without some word has about as many as the whole mailbox, and an
 * exact count of that would read every email.
 */
export function searchesWords(filter: MailFilter): boolean {
  if (filter.emailAddress !== undefined) return true;
  return Boolean(filter.search?.trim()) && parseSearch(filter.search!).terms.length > 0;
}

/**
 * Whether the email_counts table holds the filter's exact total: it counts by account, domain, archived, parse
 * status and read state only, so any search, address, time window or id list needs the emails counted.
 */
export function hasStoredCount(filter: MailFilter): boolean {
  return (
    !filter.search?.trim() &&
    filter.emailAddress === undefined &&
    filter.timeRange === undefined &&
    filter.ids === undefined &&
    filter.threadId === undefined
  );
}

/**
 * The FTS5 expression SQLite's `fts-joined` plan matches: the search's words and the address's together. Undefined
 * when the filter does not use the index or its address has no words (it then matches nothing).
 */
export function ftsMatchOf(filter: MailFilter): string | undefined {
  if (!usesSearchIndex(filter)) return undefined;
  const terms = filter.search?.trim() ? parseSearch(filter.search).terms : [];
  if (filter.emailAddress === undefined) return ftsExpression(terms, undefined);
  const words = searchWords(filter.emailAddress.trim().toLowerCase());
  return words.length > 0 ? ftsExpression(terms, words) : undefined;
}

/** The earliest received_at the filter allows (its time range or `after:`), if it has one. */
export function earliestReceivedAt(filter: MailFilter, now: number): string | undefined {
  const bounds = filter.search?.trim()
    ? parseSearch(filter.search).filters.flatMap((condition) => (condition.kind === 'after' ? [condition.at] : []))
    : [];
  if (filter.timeRange) bounds.push(new Date(now - TIME_RANGE_MS[filter.timeRange]).toISOString());
  return bounds.sort().at(-1);
}

/** A positive `to:` term, which the subset of mailConditions compares with the envelope recipient. */
function isRecipientTerm(term: TextTerm): boolean {
  return term.field === 'recipients' && !term.negated;
}

/**
 * Which of a filter's conditions a query applies. `all`; `subset`, which matches an address or a `to:` value with
 * the envelope recipient only (see mailConditions); `scope`, every condition but the words and the address (which
 * emails a walk looks at); `words`, only the words and the address (what the walk tests, see PostgresMailPages).
 */
export type ConditionSet = 'all' | 'subset' | 'scope' | 'words';

/** How mailConditions builds its conditions (each has a default). */
export interface ConditionOptions {
  /** Which side SQLite starts from (see SqlitePlan). */
  plan?: SqlitePlan;
  set?: ConditionSet;
  /** Which words are common, so that PostgreSQL keeps the negated ones out of its GIN condition. */
  isCommon?: IsCommonTerm;
}

/**
 * Whether `mailConditions(..., { set: 'subset' })` differs from the filter's own conditions: an address or
 * a `to:`.
 */
export function hasCheaperSubset(filter: MailFilter): boolean {
  if (filter.emailAddress !== undefined) return true;
  return Boolean(filter.search?.trim()) && parseSearch(filter.search!).terms.some(isRecipientTerm);
}

/**
 * Every condition of a filter, for `where((eb) => eb.and(...))`; parses `search` (throws Invalid on bad dates).
 * With `set: 'subset'`, the conditions match some of the filter's emails through a b-tree lookup: an address or a
 * `to:` value matches the envelope recipient only, whose words start the indexed recipients, so it implies the
 * index match. The full-text index answers these slowly, as it must intersect the address's words, one of them the
 * account's own domain that every email holds. When the subset already has more emails than a list counts, so does
 * the filter.
 */
export function mailConditions(
  dialect: SqlDialect,
  accountId: string,
  filter: MailFilter,
  now: number,
  { plan = 'matches-first', set = 'all', isCommon }: ConditionOptions = {},
): (eb: EmailsBuilder) => Expression<SqlBool>[] {
  const subset = set === 'subset';
  const search = filter.search?.trim() ? parseSearch(filter.search) : undefined;
  const address = filter.emailAddress?.trim().toLowerCase();
  return (eb) => {
    // SQLite has no statistics to tell it that a word is rarer than an account's mail; with the account test kept
    // off its index (unary +), a search starts from the FTS5 matches and looks the emails up by rowid.
    const searchLeads = dialect === 'sqlite' && plan !== 'newest-first' && usesSearchIndex(filter);
    // `conditions` says which emails to look at, `words` what they must contain.
    const words: Expression<SqlBool>[] = [];
    const conditions: Expression<SqlBool>[] = [
      searchLeads ? sql<SqlBool>`+emails.account_id = ${accountId}` : eb('emails.account_id', '=', accountId),
    ];
    const archived = filter.archived ?? 'exclude';
    if (archived !== 'include') conditions.push(eb('emails.is_archived', '=', toFlag(archived === 'only')));
    if (filter.parseSuccess !== undefined)
      conditions.push(eb('emails.parse_success', '=', toFlag(filter.parseSuccess)));
    if (filter.isRead !== undefined) conditions.push(eb('emails.is_read', '=', toFlag(filter.isRead)));
    if (filter.timeRange) {
      const since = new Date(now - TIME_RANGE_MS[filter.timeRange]).toISOString();
      conditions.push(eb('emails.received_at', '>=', since));
    }
    if (filter.domainIds) {
      conditions.push(
        filter.domainIds.length > 0 ? eb('emails.domain_id', 'in', filter.domainIds) : sql<SqlBool>`1 = 0`,
      );
    }
    if (address !== undefined) words.push(...addressConditions(dialect, eb, address, plan, subset));
    if (filter.ids) conditions.push(filter.ids.length > 0 ? eb('emails.id', 'in', filter.ids) : sql<SqlBool>`1 = 0`);
    if (filter.threadId) conditions.push(eb('emails.thread_id', '=', filter.threadId));
    if (search) {
      const recipientTerms = subset ? search.terms.filter(isRecipientTerm) : [];
      for (const term of recipientTerms) words.push(eb('emails.recipient', '=', term.text));
      words.push(
        ...textConditions(
          dialect,
          search.terms.filter((term) => !recipientTerms.includes(term)),
          plan,
          isCommon,
        ),
      );
      for (const condition of search.filters) {
        if (condition.kind === 'nothing') {
          conditions.push(sql<SqlBool>`1 = 0`);
        } else if (condition.kind === 'attachment') {
          conditions.push(eb('emails.attachment_count', condition.value ? '>' : '=', 0));
        } else if (condition.kind === 'read') {
          conditions.push(eb('emails.is_read', '=', toFlag(condition.value)));
        } else {
          conditions.push(eb('emails.received_at', condition.kind === 'before' ? '<' : '>=', condition.at));
        }
      }
    }
    if (set === 'scope') return conditions;
    if (set === 'words') return words;
    return [...conditions, ...words];
  };
}
