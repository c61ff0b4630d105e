import { setFlagsFromString } from 'node:v8';
import { Invalid } from '../core/index.ts';

/**
 * How a text condition compares: the whole value (`exact`), a part of it (`contains`), the whole value with `*`
 * standing for any run of characters (`wildcard`, e.g. `*@example.com`), all three ignoring case; or a regular
 * expression searched for in the value (`regex`), case-sensitive as written (the linear-time engine has no `i`).
 */
export const TEXT_OPERATORS = ['exact', 'contains', 'wildcard', 'regex'] as const;
export type TextOperator = (typeof TEXT_OPERATORS)[number];

export interface TextPattern {
  operator: TextOperator;
  value: string;
}

/** Longest pattern accepted; regexes are short in practice, and a long one is more likely a mistake than a rule. */
const MAX_PATTERN_LENGTH = 256;

/**
 * Compiles a regex with V8's linear-time engine (the `l` flag), so that no pattern, however written, can backtrack
 * catastrophically on a hostile subject or header. The engine is behind a V8 flag that only affects regexes
 * compiled with `l`; it is switched on the first time one is needed.
 */
function linearRegExp(source: string): RegExp {
  try {
    return new RegExp(source, 'l');
  } catch (error) {
    if (!(error instanceof SyntaxError) || !/flags/i.test(error.message)) throw error;
    setFlagsFromString('--enable-experimental-regexp-engine');
    return new RegExp(source, 'l');
  }
}

/**
 * How much of a field's values a text condition looks at, all of them together. An outside sender chooses the
 * subject and the headers, and may repeat a header thousands of times; every condition of every rule of the account
 * would otherwise read all of it, on the event loop every account shares (see docs/internals.md, Rules).
 */
export const EXAMINED_CHARS = 16_384;

/**
 * Regex work one message's rules may do, in characters searched times the pattern's length, which is what the
 * linear-time engine's time follows: the longest pattern over one whole window (see docs/internals.md, Rules).
 */
const REGEX_WORK_PER_MESSAGE = EXAMINED_CHARS * MAX_PATTERN_LENGTH;

/** What is left of REGEX_WORK_PER_MESSAGE while one message's rules run; spent, a regex searches nothing. */
export class RegexBudget {
  left = REGEX_WORK_PER_MESSAGE;
}

/** The values a condition looks at: in order, within EXAMINED_CHARS in all, the last one cut when `cut` allows. */
function examined(values: readonly (string | null)[], cut: boolean): string[] {
  const seen: string[] = [];
  let left = EXAMINED_CHARS;
  for (const value of values) {
    if (value === null) continue;
    if (value.length > left) {
      if (cut && left > 0) seen.push(value.slice(0, left));
      break;
    }
    seen.push(value);
    left -= value.length;
  }
  return seen;
}

const escapeRegExp = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/**
 * `*` is any run (newlines too), the rest is literal, ignoring case. Not one `^a.*b$` regex: it backtracks
 * exponentially (`*a*a*a*a*a*a*b` on sixty `a`s), and the linear engine has no `i`. Each literal part is found at its
 * leftmost place after the previous one, which leaves the most room for the rest. Parts are case-insensitive regexes
 * of literal characters, so letters compare as they did and a part matches exactly its own length.
 */
function wildcardMatcher(value: string): (candidate: string) => boolean {
  const literal = (text: string, flags: string) => ({
    length: text.length,
    regex: new RegExp(escapeRegExp(text), flags),
  });
  const parts = value.split('*');
  const head = literal(parts[0]!, 'iy');
  const tail = parts.length > 1 ? literal(parts.at(-1)!, 'iy') : null;
  const middle = parts.slice(1, -1).map((text) => literal(text, 'ig'));
  // Where the part is found from index on (`g`), or whether it is right at index (`y`); -1 when not.
  const find = (part: ReturnType<typeof literal>, candidate: string, index: number) => {
    part.regex.lastIndex = index;
    return part.regex.exec(candidate)?.index ?? -1;
  };
  return (candidate) => {
    if (!tail) return candidate.length === head.length && find(head, candidate, 0) === 0;
    const end = candidate.length - tail.length;
    if (end < head.length || find(head, candidate, 0) !== 0 || find(tail, candidate, end) !== end) return false;
    let from = head.length;
    for (const part of middle) {
      const found = find(part, candidate, from);
      if (found < 0 || found + part.length > end) return false;
      from = found + part.length;
    }
    return true;
  };
}

/** A predicate over a field's values (null for one that is absent), true when one of them matches. */
export type PatternTest = (values: readonly (string | null)[], budget: RegexBudget) => boolean;

/**
 * The predicate for `pattern`, or Invalid (naming `field`) when the pattern cannot be used. `contains` and `regex`
 * look in the part of a value within EXAMINED_CHARS; `exact` and `wildcard` compare whole values only, as a cut
 * value is not the value.
 */
export function compilePattern(field: string, pattern: TextPattern): PatternTest {
  const { operator, value } = pattern;
  if (value.length === 0) throw new Invalid(`${field}: value must not be empty`);
  if (value.length > MAX_PATTERN_LENGTH) {
    throw new Invalid(`${field}: value must be at most ${MAX_PATTERN_LENGTH} characters`);
  }
  if (operator === 'regex') return regexSearch(field, value);
  const lower = value.toLowerCase();
  const test =
    operator === 'exact'
      ? (candidate: string) => candidate.toLowerCase() === lower
      : operator === 'contains'
        ? (candidate: string) => candidate.toLowerCase().includes(lower)
        : wildcardMatcher(value);
  const cut = operator === 'contains';
  return (values) => examined(values, cut).some(test);
}

/** Searches the examined values in turn, while the message's regex budget lasts. */
function regexSearch(field: string, source: string): PatternTest {
  let regex: RegExp;
  try {
    regex = linearRegExp(source);
  } catch (error) {
    throw new Invalid(`${field}: invalid regex (${(error as Error).message})`);
  }
  return (values, budget) => {
    for (const candidate of examined(values, true)) {
      if (budget.left < source.length) return false;
      const searchable = Math.min(candidate.length, Math.floor(budget.left / source.length));
      budget.left -= Math.max(searchable, 1) * source.length;
      if (regex.test(searchable < candidate.length ? candidate.slice(0, searchable) : candidate)) return true;
    }
    return false;
  };
}
