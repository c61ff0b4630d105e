import { type Clock, Invalid, isoNow, LimitReached, NotFound, newId, type Page } from '../core/index.ts';
import { type Db, onPostgres } from '../db/index.ts';
import { findStoredEmail, type StoredEmail } from '../mail/index.ts';
import type { RuleEvaluator } from './rule-evaluator.ts';
import { type ConditionResult, compileRule, type MessageFacts, messageFacts } from './rule-matcher.ts';
import {
  DEFAULT_PRIORITY,
  type Rule,
  type RuleAction,
  validateAction,
  validateConditions,
  validateName,
  validatePriority,
} from './rule-model.ts';
import { actionColumns, ruleFromRow } from './rule-rows.ts';

/**
 * Rules an account may have, active or not (Cloudflare Email Routing allows as many per zone). Every message to the
 * account runs them all on the event loop; EXAMINED_CHARS bounds what each condition reads of a hostile message.
 */
export const MAX_RULES_PER_ACCOUNT = 200;

/** A rule as sent to create it; `conditions` and `action` are checked by the service. */
export interface RuleInput {
  name?: string;
  description?: string | null;
  isActive?: boolean;
  priority?: number;
  conditions?: unknown;
  action?: unknown;
}

/** The endpoint a route action names, if the account has it. */
export type EndpointLookup = (
  accountId: string,
  id: string,
) => Promise<{ id: string; name: string; type: string; isActive: boolean } | undefined>;

export interface RuleCheck {
  ruleId: string;
  emailId: string;
  /** True when every condition holds (whether the rule is active or not). */
  matched: boolean;
  action: RuleAction;
  conditions: ConditionResult[];
}

/** What rules see of a stored email: the same facts ingest gave them when it arrived. */
function storedEmailFacts(email: StoredEmail): MessageFacts {
  return messageFacts({
    mailFrom: email.mailFrom,
    fromAddress: email.fromAddress,
    recipient: email.recipient,
    subject: email.subject,
    headers: email.headers,
    attachmentCount: email.attachments.length,
    verdicts: email.verdicts,
  });
}

/** Guard-style rules of an account: create, read, change, delete, and check one against a stored email. */
export class RulesService {
  readonly #db: Db;
  readonly #clock: Clock;
  readonly #findEndpoint: EndpointLookup;
  readonly #evaluator: RuleEvaluator;

  constructor(deps: { db: Db; clock: Clock; findEndpoint: EndpointLookup; evaluator: RuleEvaluator }) {
    this.#db = deps.db;
    this.#clock = deps.clock;
    this.#findEndpoint = deps.findEndpoint;
    this.#evaluator = deps.evaluator;
  }

  /** The account's rules in the order they run: by priority, then by creation. */
  async list(accountId: string, page: { limit: number; offset: number }): Promise<Page<Rule>> {
    const base = this.#db.selectFrom('rules').where('account_id', '=', accountId);
    const [rows, count] = await Promise.all([
      base.selectAll().orderBy('priority').orderBy('id').limit(page.limit).offset(page.offset).execute(),
      base.select((eb) => eb.fn.countAll().as('n')).executeTakeFirstOrThrow(),
    ]);
    return { items: rows.map(ruleFromRow), total: Number(count.n) };
  }

  async get(accountId: string, id: string): Promise<Rule> {
    const row = await this.#db
      .selectFrom('rules')
      .selectAll()
      .where('id', '=', id)
      .where('account_id', '=', accountId)
      .executeTakeFirst();
    if (!row) throw new NotFound('Rule not found');
    return ruleFromRow(row);
  }

  async create(accountId: string, input: RuleInput): Promise<Rule> {
    const name = validateName(input.name);
    const conditions = validateConditions(input.conditions);
    const action = await this.checkedAction(accountId, input.action);
    const priority = input.priority === undefined ? DEFAULT_PRIORITY : validatePriority(input.priority);
    const now = isoNow(this.#clock);
    const id = newId('rule');
    await this.#db.transaction().execute(async (trx) => {
      // The account's other creates wait for this one (PostgreSQL: its row lock; SQLite: the write lock), so that
      // each counts the others' rules.
      let account = trx.selectFrom('accounts').select('id').where('id', '=', accountId);
      if (onPostgres(trx)) account = account.forNoKeyUpdate();
      await account.executeTakeFirstOrThrow();
      const rules = await trx
        .selectFrom('rules')
        .select((eb) => eb.fn.countAll().as('n'))
        .where('account_id', '=', accountId)
        .executeTakeFirstOrThrow();
      if (Number(rules.n) >= MAX_RULES_PER_ACCOUNT) {
        throw new LimitReached(`Rule limit reached: an account can have at most ${MAX_RULES_PER_ACCOUNT} rules`);
      }
      await trx
        .insertInto('rules')
        .values({
          id,
          account_id: accountId,
          name,
          description: input.description?.trim() || null,
          is_active: input.isActive === false ? 0 : 1,
          priority,
          conditions_json: JSON.stringify(conditions),
          ...actionColumns(action),
          created_at: now,
          updated_at: now,
        })
        .execute();
    });
    this.#evaluator.invalidate(accountId);
    return this.get(accountId, id);
  }

  /** Changes the fields sent; `conditions` and `action` are replaced whole. */
  async update(accountId: string, id: string, input: RuleInput): Promise<Rule> {
    await this.get(accountId, id);
    const changes = {
      ...(input.name === undefined ? {} : { name: validateName(input.name) }),
      ...(input.description === undefined ? {} : { description: input.description?.trim() || null }),
      ...(input.isActive === undefined ? {} : { is_active: input.isActive ? (1 as const) : (0 as const) }),
      ...(input.priority === undefined ? {} : { priority: validatePriority(input.priority) }),
      ...(input.conditions === undefined
        ? {}
        : { conditions_json: JSON.stringify(validateConditions(input.conditions)) }),
      ...(input.action === undefined ? {} : actionColumns(await this.checkedAction(accountId, input.action))),
    };
    await this.#db
      .updateTable('rules')
      .set({ ...changes, updated_at: isoNow(this.#clock) })
      .where('id', '=', id)
      .where('account_id', '=', accountId)
      .execute();
    this.#evaluator.invalidate(accountId);
    return this.get(accountId, id);
  }

  async remove(accountId: string, id: string): Promise<{ id: string }> {
    const result = await this.#db
      .deleteFrom('rules')
      .where('id', '=', id)
      .where('account_id', '=', accountId)
      .executeTakeFirst();
    if (Number(result.numDeletedRows) === 0) throw new NotFound('Rule not found');
    this.#evaluator.invalidate(accountId);
    return { id };
  }

  /** Whether the rule's conditions hold for one of the account's stored emails, condition by condition. */
  async check(accountId: string, id: string, emailId: unknown): Promise<RuleCheck> {
    const rule = await this.get(accountId, id);
    if (typeof emailId !== 'string' || emailId === '') throw new Invalid('emailId is required');
    const email = await findStoredEmail(this.#db, emailId);
    if (!email || email.accountId !== accountId) throw new NotFound('Email not found');
    const conditions = compileRule(rule).check(storedEmailFacts(email));
    return {
      ruleId: rule.id,
      emailId: email.id,
      matched: conditions.every((result) => result.matched),
      action: rule.action,
      conditions,
    };
  }

  /** A route action may name only an endpoint of the same account. */
  private async checkedAction(accountId: string, value: unknown): Promise<RuleAction> {
    const action = validateAction(value);
    if (action.type === 'route' && !(await this.#findEndpoint(accountId, action.endpointId))) {
      throw new Invalid('Endpoint not found or does not belong to user');
    }
    return action;
  }
}
