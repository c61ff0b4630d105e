import type { Db } from '../db/index.ts';
import {
  Blocklist,
  type CompiledRule,
  compileRule,
  evaluateRules,
  type MessageFacts,
  NO_RULES_MATCHED,
  type RuleOutcome,
} from './rule-matcher.ts';
import { ruleFromRow } from './rule-rows.ts';

/**
 * How long an account's rules are kept in memory. Changes made through this process drop them at once; another
 * process (several share one PostgreSQL) sees a change within this time.
 */
const RULES_CACHE_MS = 5_000;

/** An account's blocklist and its active rules by priority, compiled. */
interface AccountRules {
  blocklist: Blocklist;
  rules: CompiledRule[];
}

/** Accounts kept at most; past that the cache starts over. */
const MAX_ACCOUNTS = 10_000;

/**
 * The one way rules run at ingest and in a dry run: an account's blocklist entries first (as block rules), then its
 * active rules by priority, compiled once and kept per account for RULES_CACHE_MS.
 */
export class RuleEvaluator {
  readonly #db: Db;
  readonly #kept = new Map<string, { at: number; rules: Promise<AccountRules> }>();

  constructor(db: Db) {
    this.#db = db;
  }

  async evaluate(accountId: string, facts: MessageFacts): Promise<RuleOutcome> {
    const { blocklist, rules } = await this.rulesOf(accountId);
    if (blocklist.size === 0 && rules.length === 0) return NO_RULES_MATCHED;
    return evaluateRules([...blocklist.entriesFor(facts), ...rules], facts);
  }

  /** Drops what is kept for the account, after a change to its rules or blocklist. */
  invalidate(accountId: string): void {
    this.#kept.delete(accountId);
  }

  private rulesOf(accountId: string): Promise<AccountRules> {
    const now = Date.now();
    const kept = this.#kept.get(accountId);
    if (kept && now - kept.at < RULES_CACHE_MS) return kept.rules;
    if (this.#kept.size >= MAX_ACCOUNTS) this.#kept.clear();
    const rules = this.load(accountId);
    const entry = { at: now, rules };
    this.#kept.set(accountId, entry);
    // A failed read is not kept: the next message reads again.
    rules.catch(() => {
      if (this.#kept.get(accountId) === entry) this.#kept.delete(accountId);
    });
    return rules;
  }

  private async load(accountId: string): Promise<AccountRules> {
    const [blocked, rows] = await Promise.all([
      this.#db
        .selectFrom('blocked_senders')
        .select(['id', 'email_address'])
        .where('account_id', '=', accountId)
        .orderBy('id')
        .execute(),
      this.#db
        .selectFrom('rules')
        .selectAll()
        .where('account_id', '=', accountId)
        .where('is_active', '=', 1)
        .orderBy('priority')
        .orderBy('id')
        .execute(),
    ]);
    return {
      blocklist: new Blocklist(blocked.map((entry) => ({ id: entry.id, emailAddress: entry.email_address }))),
      rules: rows.map((row) => compileRule(ruleFromRow(row))),
    };
  }
}
