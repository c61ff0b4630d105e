import { Invalid } from '../core/index.ts';
import { compilePattern, TEXT_OPERATORS, type TextPattern } from './text-pattern.ts';

/** The verdict words a verdict condition lists, as the API spells them (stored verdicts are upper-case). */
export const VERDICT_WORDS = ['pass', 'fail', 'softfail', 'neutral', 'none', 'temperror', 'permerror'] as const;
export type VerdictWord = (typeof VERDICT_WORDS)[number];

export interface HeaderCondition {
  /** The header's name, any case. */
  name: string;
  value: TextPattern;
}

/**
 * What a rule looks at; every condition given must hold (AND). `sender` matches when either the envelope sender
 * (MAIL FROM) or the From header's address does, and `senderDomain` likewise for their domains. A verdict condition
 * holds when the message's verdict is one of the words listed.
 */
export interface RuleConditions {
  sender?: TextPattern;
  senderDomain?: TextPattern;
  recipient?: TextPattern;
  subject?: TextPattern;
  headers?: HeaderCondition[];
  hasAttachment?: boolean;
  spf?: VerdictWord[];
  dkim?: VerdictWord[];
  dmarc?: VerdictWord[];
}

export type ConditionName = keyof RuleConditions;

/** In the order conditions are evaluated and reported. */
export const CONDITION_NAMES = [
  'sender',
  'senderDomain',
  'recipient',
  'subject',
  'headers',
  'hasAttachment',
  'spf',
  'dkim',
  'dmarc',
] as const satisfies readonly ConditionName[];

const VERDICT_CONDITIONS = ['spf', 'dkim', 'dmarc'] as const satisfies readonly ConditionName[];

export type RuleAction = { type: 'block' } | { type: 'route'; endpointId: string } | { type: 'tag'; tag: string };

export interface Rule {
  id: string;
  accountId: string;
  name: string;
  description: string | null;
  isActive: boolean;
  priority: number;
  conditions: RuleConditions;
  action: RuleAction;
  createdAt: string;
  updatedAt: string;
}

export const DEFAULT_PRIORITY = 100;
const MAX_PRIORITY = 1_000_000;
const MAX_HEADER_CONDITIONS = 10;
const MAX_NAME_LENGTH = 200;
const MAX_TAG_LENGTH = 64;

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

function textPattern(field: string, value: unknown): TextPattern {
  if (!isObject(value)) throw new Invalid(`${field} must be an object {operator, value}`);
  const { operator, value: text } = value;
  if (!TEXT_OPERATORS.includes(operator as never)) {
    throw new Invalid(`${field}.operator must be one of ${TEXT_OPERATORS.join(', ')}`);
  }
  if (typeof text !== 'string') throw new Invalid(`${field}.value must be a string`);
  const pattern = { operator: operator as TextPattern['operator'], value: text };
  compilePattern(field, pattern);
  return pattern;
}

function verdictList(field: string, value: unknown): VerdictWord[] {
  if (!Array.isArray(value) || value.length === 0) throw new Invalid(`${field} must be a non-empty array`);
  const words = value.map((word) => (typeof word === 'string' ? word.toLowerCase() : word));
  for (const word of words) {
    if (!VERDICT_WORDS.includes(word)) throw new Invalid(`${field} values must be among ${VERDICT_WORDS.join(', ')}`);
  }
  return [...new Set(words as VerdictWord[])];
}

/** Checks a rule's `conditions` as sent and returns them normalized; at least one condition is required. */
export function validateConditions(value: unknown): RuleConditions {
  if (!isObject(value)) throw new Invalid('conditions must be an object');
  const unknown = Object.keys(value).filter((key) => !CONDITION_NAMES.includes(key as never));
  if (unknown.length > 0) throw new Invalid(`Unknown condition: ${unknown[0]}`);
  const conditions: RuleConditions = {};
  for (const field of ['sender', 'senderDomain', 'recipient', 'subject'] as const) {
    if (value[field] !== undefined) conditions[field] = textPattern(`conditions.${field}`, value[field]);
  }
  if (value.headers !== undefined) {
    const headers = value.headers;
    if (!Array.isArray(headers) || headers.length === 0 || headers.length > MAX_HEADER_CONDITIONS) {
      throw new Invalid(`conditions.headers must be an array of 1 to ${MAX_HEADER_CONDITIONS} {name, value}`);
    }
    conditions.headers = headers.map((header, index) => {
      const field = `conditions.headers[${index}]`;
      if (!isObject(header) || typeof header.name !== 'string' || !/^[\x21-\x39\x3b-\x7e]+$/.test(header.name)) {
        throw new Invalid(`${field}.name must be a header name`);
      }
      return { name: header.name.toLowerCase(), value: textPattern(`${field}.value`, header.value) };
    });
  }
  if (value.hasAttachment !== undefined) {
    if (typeof value.hasAttachment !== 'boolean') throw new Invalid('conditions.hasAttachment must be a boolean');
    conditions.hasAttachment = value.hasAttachment;
  }
  for (const field of VERDICT_CONDITIONS) {
    if (value[field] !== undefined) conditions[field] = verdictList(`conditions.${field}`, value[field]);
  }
  if (Object.keys(conditions).length === 0) throw new Invalid('At least one condition is required');
  return conditions;
}

/** Checks a rule's `action` as sent; whether a route's endpoint is the account's is the service's to check. */
export function validateAction(value: unknown): RuleAction {
  if (!isObject(value)) throw new Invalid('action must be an object {type, ...}');
  switch (value.type) {
    case 'block':
      return { type: 'block' };
    case 'route':
      if (typeof value.endpointId !== 'string' || value.endpointId === '') {
        throw new Invalid('action.endpointId is required for a route action');
      }
      return { type: 'route', endpointId: value.endpointId };
    case 'tag': {
      const tag = typeof value.tag === 'string' ? value.tag.trim() : '';
      if (tag === '' || tag.length > MAX_TAG_LENGTH) {
        throw new Invalid(`action.tag must be 1 to ${MAX_TAG_LENGTH} characters for a tag action`);
      }
      return { type: 'tag', tag };
    }
    default:
      throw new Invalid('action.type must be one of block, route, tag');
  }
}

export function validateName(value: unknown): string {
  const name = typeof value === 'string' ? value.trim() : '';
  if (name === '' || name.length > MAX_NAME_LENGTH)
    throw new Invalid(`name must be 1 to ${MAX_NAME_LENGTH} characters`);
  return name;
}

export function validatePriority(value: unknown): number {
  if (!Number.isInteger(value) || (value as number) < 0 || (value as number) > MAX_PRIORITY) {
    throw new Invalid(`priority must be an integer from 0 to ${MAX_PRIORITY}`);
  }
  return value as number;
}
