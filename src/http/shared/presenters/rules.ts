import { Type } from 'typebox';
import type { RuleMatch, StoredEmail } from '../../../mail/index.ts';
import { CONDITION_NAMES, EXAMINED_CHARS, type Rule, TEXT_OPERATORS, VERDICT_WORDS } from '../../../rules/index.ts';
import { DateTime, Nullable } from '../../schemas.ts';

/** A string that is one of `values`, typed as their union. */
const literals = <T extends string>(values: readonly T[]) =>
  Type.Unsafe<T>(Type.Union(values.map((value) => Type.Literal(value))));

const TextPatternSchema = Type.Object(
  {
    operator: literals(TEXT_OPERATORS),
    value: Type.String({ description: 'At most 256 characters' }),
  },
  {
    description:
      '`exact` whole value, `contains` part of it, `wildcard` with `*` for any run (`*@example.com`), all ignoring ' +
      'case; `regex` searched for, case-sensitive (linear-time engine: no backreferences, lookarounds or flags). ' +
      `Each looks at the first ${EXAMINED_CHARS.toLocaleString('en')} characters of the field (a repeated header: ` +
      'of its values together); `exact` and `wildcard` compare whole values only',
  },
);
const VerdictsSchema = Type.Array(literals(VERDICT_WORDS), { minItems: 1 });

export const RuleConditionsSchema = Type.Object(
  {
    sender: Type.Optional(TextPatternSchema),
    senderDomain: Type.Optional(TextPatternSchema),
    recipient: Type.Optional(TextPatternSchema),
    subject: Type.Optional(TextPatternSchema),
    headers: Type.Optional(
      Type.Array(Type.Object({ name: Type.String(), value: TextPatternSchema }), { minItems: 1, maxItems: 10 }),
    ),
    hasAttachment: Type.Optional(Type.Boolean()),
    spf: Type.Optional(VerdictsSchema),
    dkim: Type.Optional(VerdictsSchema),
    dmarc: Type.Optional(VerdictsSchema),
  },
  {
    additionalProperties: false,
    description:
      'Every condition given must hold. `sender` matches the envelope sender (MAIL FROM) or the From address, ' +
      "`senderDomain` either one's domain; a verdict condition holds when the verdict is one of those listed.",
  },
);

export const RuleActionSchema = Type.Union([
  Type.Object({ type: Type.Literal('block') }, { description: 'Store and flag the email; deliver nothing' }),
  Type.Object(
    { type: Type.Literal('route'), endpointId: Type.String() },
    { description: "Deliver to this endpoint of the account instead of the address's target" },
  ),
  Type.Object({ type: Type.Literal('tag'), tag: Type.String() }, { description: 'Add a tag to the email' }),
]);

export const RuleSchema = Type.Object({
  id: Type.String(),
  name: Type.String(),
  description: Nullable(Type.String()),
  isActive: Type.Boolean(),
  priority: Type.Integer({ description: 'Lower runs first' }),
  conditions: RuleConditionsSchema,
  action: RuleActionSchema,
  createdAt: DateTime,
  updatedAt: DateTime,
});

export function presentRule(rule: Rule) {
  const { accountId: _accountId, ...shown } = rule;
  return shown;
}

export const RuleCheckSchema = Type.Object({
  ruleId: Type.String(),
  emailId: Type.String(),
  matched: Type.Boolean({ description: 'Every condition holds' }),
  action: RuleActionSchema,
  conditions: Type.Array(Type.Object({ condition: literals(CONDITION_NAMES), matched: Type.Boolean() })),
});

const RuleMatchSchema = Type.Object({
  ruleId: Type.String({ description: 'A rule id, or a blocklist entry id' }),
  name: Type.String({ description: "The rule's name, or the blocked address" }),
  source: literals(['rule', 'blocklist'] as const),
  action: literals(['block', 'route', 'tag'] as const),
  applied: Type.Boolean({ description: 'False for a block or route that an earlier match overrode' }),
  endpointId: Type.Optional(Type.String()),
  tag: Type.Optional(Type.String()),
});

/** What the rules did to a stored email: every match in the order they ran, and whether a block applied. */
export const GuardSchema = Type.Object({
  matches: Type.Array(RuleMatchSchema),
  blocked: Type.Boolean(),
});

export const presentGuard = (email: Pick<StoredEmail, 'ruleMatches'>) => ({
  matches: email.ruleMatches,
  blocked: email.ruleMatches.some((match) => match.applied && match.action === 'block'),
});

/** The tags the rules added to an email, in the order they ran. */
export const tagsOf = (email: Pick<StoredEmail, 'ruleMatches'>) => [
  ...new Set(email.ruleMatches.flatMap((match: RuleMatch) => (match.tag ? [match.tag] : []))),
];

export const BlockedSenderSchema = Type.Object({
  id: Type.String(),
  emailAddress: Type.String({ description: 'An address, or `*@domain` for every address of the domain' }),
  createdAt: DateTime,
});

export const RoutingExplanationSchema = Type.Object({
  recipient: Type.String(),
  accepted: Type.Boolean({ description: 'Whether SMTP would accept the recipient at RCPT' }),
  rejection: Nullable(
    Type.Object({
      reason: Type.String(),
      code: Type.Integer(),
      message: Type.String({ description: 'The SMTP reply text after the code' }),
    }),
  ),
  matchedBy: Nullable(Type.String({ description: 'address, subaddress, catch_all, dmarc, ...' })),
  domainId: Nullable(Type.String()),
  addressId: Nullable(Type.String()),
  rules: Type.Array(RuleMatchSchema, {
    description: 'Verdict and hasAttachment conditions do not hold in a dry run',
  }),
  blocked: Type.Boolean(),
  blocklistEntry: Nullable(Type.Object({ id: Type.String(), emailAddress: Type.String() })),
  tags: Type.Array(Type.String()),
  target: Nullable(
    Type.Object({
      id: Type.String(),
      name: Type.String(),
      type: Type.String({ description: 'webhook, email, email_group, or legacy_webhook' }),
    }),
  ),
});
