import type { RuleMatch } from '../mail/index.ts';
import { CONDITION_NAMES, type ConditionName, type Rule, type RuleConditions, type VerdictWord } from './rule-model.ts';
import { compilePattern, RegexBudget, type TextPattern } from './text-pattern.ts';

/** What rules look at in one message for one recipient. */
export interface MessageFacts {
  /** The envelope sender (MAIL FROM), lower-cased; null for a null reverse-path or when not given. */
  mailFrom: string | null;
  /** The From header's address, lower-cased. */
  fromAddress: string | null;
  recipient: string;
  subject: string | null;
  /** Lower-case header name to its value or values. */
  headers: Readonly<Record<string, string | readonly string[]>>;
  /** Null when not known (a dry run): a hasAttachment condition then does not hold either way. */
  hasAttachment: boolean | null;
  /** The verdicts in lower case; null when they are not known (a dry run), and verdict conditions then do not hold. */
  verdicts: { spf: string; dkim: string; dmarc: string } | null;
}

/** The facts of a received message, from its envelope, its parsed headers and its (upper-case) verdicts. */
export function messageFacts(message: {
  mailFrom: string | null;
  fromAddress: string | null;
  recipient: string;
  subject: string | null;
  headers: Readonly<Record<string, string | readonly string[]>>;
  attachmentCount: number;
  verdicts: { spf: string; dkim: string; dmarc: string };
}): MessageFacts {
  return {
    mailFrom: message.mailFrom?.toLowerCase() || null,
    fromAddress: message.fromAddress?.toLowerCase() || null,
    recipient: message.recipient,
    subject: message.subject,
    headers: message.headers,
    hasAttachment: message.attachmentCount > 0,
    verdicts: {
      spf: message.verdicts.spf.toLowerCase(),
      dkim: message.verdicts.dkim.toLowerCase(),
      dmarc: message.verdicts.dmarc.toLowerCase(),
    },
  };
}

export interface ConditionResult {
  condition: ConditionName;
  matched: boolean;
}

/** A rule ready to run: its conditions compiled once. */
export interface CompiledRule {
  rule: Pick<Rule, 'id' | 'name' | 'action'>;
  source: RuleMatch['source'];
  /** Each condition's result; `budget` is the message's, shared by all the rules run on it. */
  check(facts: MessageFacts, budget?: RegexBudget): ConditionResult[];
}

/** Everything rules decided for one recipient's copy of a message. */
export interface RuleOutcome {
  /** Every rule that matched, in the order they ran. */
  matches: RuleMatch[];
  blocked: boolean;
  /** The endpoint a route match sends the copy to instead of its address's target. */
  routeTo: string | null;
  tags: string[];
}

export const NO_RULES_MATCHED: RuleOutcome = Object.freeze({
  matches: [],
  blocked: false,
  routeTo: null,
  tags: [],
});

const domainOf = (address: string) => address.slice(address.lastIndexOf('@') + 1);

const valuesOf = (value: string | readonly string[] | undefined): readonly string[] =>
  value === undefined ? [] : typeof value === 'string' ? [value] : value;

type ConditionCheck = (facts: MessageFacts, budget: RegexBudget) => boolean;

function textCheck(field: string, pattern: TextPattern, pick: (facts: MessageFacts) => (string | null)[]) {
  const test = compilePattern(field, pattern);
  return (facts: MessageFacts, budget: RegexBudget) => test(pick(facts), budget);
}

function verdictCheck(field: 'spf' | 'dkim' | 'dmarc', words: readonly VerdictWord[]): ConditionCheck {
  return (facts) => facts.verdicts !== null && words.includes(facts.verdicts[field] as VerdictWord);
}

/** One predicate per condition the rule has, in CONDITION_NAMES order. */
function compileConditions(conditions: RuleConditions): Array<[ConditionName, ConditionCheck]> {
  const checks: Partial<Record<ConditionName, ConditionCheck>> = {
    sender: conditions.sender && textCheck('sender', conditions.sender, (facts) => [facts.mailFrom, facts.fromAddress]),
    senderDomain:
      conditions.senderDomain &&
      textCheck('senderDomain', conditions.senderDomain, (facts) =>
        [facts.mailFrom, facts.fromAddress].map((address) => address && domainOf(address)),
      ),
    recipient: conditions.recipient && textCheck('recipient', conditions.recipient, (facts) => [facts.recipient]),
    subject: conditions.subject && textCheck('subject', conditions.subject, (facts) => [facts.subject]),
    headers:
      conditions.headers &&
      ((headers) => {
        const each = headers.map((header) => {
          const test = compilePattern('headers', header.value);
          return (facts: MessageFacts, budget: RegexBudget) => test(valuesOf(facts.headers[header.name]), budget);
        });
        return (facts: MessageFacts, budget: RegexBudget) => each.every((check) => check(facts, budget));
      })(conditions.headers),
    hasAttachment:
      conditions.hasAttachment === undefined
        ? undefined
        : (facts) => facts.hasAttachment !== null && facts.hasAttachment === conditions.hasAttachment,
    spf: conditions.spf && verdictCheck('spf', conditions.spf),
    dkim: conditions.dkim && verdictCheck('dkim', conditions.dkim),
    dmarc: conditions.dmarc && verdictCheck('dmarc', conditions.dmarc),
  };
  return CONDITION_NAMES.flatMap((name) => {
    const check = checks[name];
    return check ? [[name, check] as [ConditionName, ConditionCheck]] : [];
  });
}

export function compileRule(
  rule: Pick<Rule, 'id' | 'name' | 'action' | 'conditions'>,
  source: RuleMatch['source'] = 'rule',
): CompiledRule {
  const conditions = compileConditions(rule.conditions);
  return {
    rule: { id: rule.id, name: rule.name, action: rule.action },
    source,
    check: (facts, budget = new RegexBudget()) =>
      conditions.map(([condition, check]) => ({ condition, matched: check(facts, budget) })),
  };
}

/**
 * An account's blocklist: each entry (an address, or `*@domain`) a block rule named by its address, matched against
 * the senders like a `sender` condition. Entries are found by the name they would match, so a message checks only the
 * few that can name one of its senders, however long the list.
 */
export class Blocklist {
  readonly #byName = new Map<string, { position: number; rule: CompiledRule }>();

  /** `entries` in the order they run. */
  constructor(entries: readonly { id: string; emailAddress: string }[]) {
    entries.forEach((entry, position) => {
      const operator = entry.emailAddress.includes('*') ? 'wildcard' : 'exact';
      const rule = compileRule(
        {
          id: entry.id,
          name: entry.emailAddress,
          action: { type: 'block' },
          conditions: { sender: { operator, value: entry.emailAddress } },
        },
        'blocklist',
      );
      this.#byName.set(entry.emailAddress, { position, rule });
    });
  }

  get size(): number {
    return this.#byName.size;
  }

  /** The entries that name the envelope sender or the From address, or either one's domain, in their order. */
  entriesFor(facts: MessageFacts): CompiledRule[] {
    const found = new Map<number, CompiledRule>();
    for (const sender of [facts.mailFrom, facts.fromAddress]) {
      if (!sender) continue;
      for (const name of [sender, `*@${domainOf(sender)}`]) {
        const entry = this.#byName.get(name);
        if (entry) found.set(entry.position, entry.rule);
      }
    }
    return [...found].sort(([a], [b]) => a - b).map(([, rule]) => rule);
  }
}

/**
 * Runs `rules` in order (the blocklist first, then rules by priority) and combines what matched: the first `block`
 * or `route` match decides where the copy goes and later ones are recorded as not applied; every `tag` match adds
 * its tag.
 */
export function evaluateRules(rules: readonly CompiledRule[], facts: MessageFacts): RuleOutcome {
  const matches: RuleMatch[] = [];
  let decided: RuleMatch | undefined;
  const tags: string[] = [];
  const budget = new RegexBudget();
  for (const compiled of rules) {
    if (!compiled.check(facts, budget).every((result) => result.matched)) continue;
    const { id, name, action } = compiled.rule;
    const match: RuleMatch = { ruleId: id, name, source: compiled.source, action: action.type, applied: true };
    if (action.type === 'tag') {
      match.tag = action.tag;
      if (!tags.includes(action.tag)) tags.push(action.tag);
    } else {
      if (action.type === 'route') match.endpointId = action.endpointId;
      if (decided) match.applied = false;
      else decided = match;
    }
    matches.push(match);
  }
  if (matches.length === 0) return NO_RULES_MATCHED;
  return {
    matches,
    blocked: decided?.action === 'block',
    routeTo: decided?.action === 'route' ? decided.endpointId! : null,
    tags,
  };
}
