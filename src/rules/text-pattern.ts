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
export const MAX_PATTERN_LENGTH = 256;

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

const escapeRegExp = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** A predicate for `pattern`, or Invalid (naming `field`) when the pattern cannot be used. */
export function compilePattern(field: string, pattern: TextPattern): (value: string) => boolean {
  const { operator, value } = pattern;
  if (value.length === 0) throw new Invalid(`${field}: value must not be empty`);
  if (value.length > MAX_PATTERN_LENGTH) {
    throw new Invalid(`${field}: value must be at most ${MAX_PATTERN_LENGTH} characters`);
  }
  const lower = value.toLowerCase();
  switch (operator) {
    case 'exact':
      return (candidate) => candidate.toLowerCase() === lower;
    case 'contains':
      return (candidate) => candidate.toLowerCase().includes(lower);
    case 'wildcard': {
      const regex = new RegExp(`^${value.split('*').map(escapeRegExp).join('.*')}$`, 'is');
      return (candidate) => regex.test(candidate);
    }
    case 'regex': {
      let regex: RegExp;
      try {
        regex = linearRegExp(value);
      } catch (error) {
        throw new Invalid(`${field}: invalid regex (${(error as Error).message})`);
      }
      return (candidate) => regex.test(candidate);
    }
  }
}
