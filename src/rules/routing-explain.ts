import { Invalid, NotFound } from '../core/index.ts';
import type { RuleMatch } from '../mail/index.ts';
import { type RecipientRouter, type RejectReason, type RouteDecision, rcptRejection } from '../routing/index.ts';
import type { RuleEvaluator } from './rule-evaluator.ts';
import type { EndpointLookup } from './rules-service.ts';

export interface ExplainInput {
  recipient?: unknown;
  from?: string;
  subject?: string;
  headers?: Record<string, string>;
}

export interface ExplainTarget {
  id: string;
  name: string;
  /** An endpoint's type, or `legacy_webhook` for a v2 webhook. */
  type: string;
}

export interface RoutingExplanation {
  recipient: string;
  accepted: boolean;
  /** Why SMTP would refuse the recipient, and the reply it would send; null when accepted. */
  rejection: { reason: RejectReason; code: number; message: string } | null;
  /** How the recipient matched: an address, its +tag's base, a catch-all, dmarc@ mail, or the routing's other kinds. */
  matchedBy: string | null;
  domainId: string | null;
  addressId: string | null;
  /** The rules and blocklist entries that would match, in the order they run. */
  rules: RuleMatch[];
  blocked: boolean;
  blocklistEntry: { id: string; emailAddress: string } | null;
  tags: string[];
  /** Where a delivery would go after the rules; null when the mail would only be stored. */
  target: ExplainTarget | null;
}

export interface ExplainDependencies {
  router: RecipientRouter;
  evaluator: RuleEvaluator;
  findEndpoint: EndpointLookup;
  findWebhook(accountId: string, id: string): Promise<{ id: string; name: string; isActive: boolean } | undefined>;
}

/**
 * A dry run of what SMTP and ingest would do with one recipient: the routing decision, then the account's rules
 * with the given sender, subject and headers. Nothing is sent or stored. The verdicts and attachments of a message
 * that was never received are not known, so verdict and hasAttachment conditions do not hold here. A recipient on
 * another account's domain is not found, accepted or not: its routing and rules are that account's, and so is
 * whether an address is inactive or missing, which SMTP does not tell apart.
 */
export async function explainRouting(
  deps: ExplainDependencies,
  accountId: string,
  input: ExplainInput,
): Promise<RoutingExplanation> {
  if (typeof input.recipient !== 'string' || input.recipient.trim() === '') throw new Invalid('recipient is required');
  const decision = await deps.router.resolve(input.recipient);
  const recipient = decision.accepted ? decision.recipient : input.recipient.trim().toLowerCase();
  if (decision.accountId !== undefined && decision.accountId !== accountId) throw new NotFound('Domain not found');
  if (!decision.accepted) {
    return {
      recipient,
      accepted: false,
      rejection: { reason: decision.reason, ...rcptRejection(decision.reason, recipient) },
      matchedBy: null,
      domainId: null,
      addressId: null,
      rules: [],
      blocked: false,
      blocklistEntry: null,
      tags: [],
      target: null,
    };
  }
  const sender = input.from?.trim().toLowerCase() || null;
  const outcome = await deps.evaluator.evaluate(decision.accountId, {
    mailFrom: sender,
    fromAddress: sender,
    recipient,
    subject: input.subject ?? null,
    headers: Object.fromEntries(
      Object.entries(input.headers ?? {}).map(([name, value]) => [name.toLowerCase(), value]),
    ),
    hasAttachment: null,
    verdicts: null,
  });
  const blocklisted = outcome.matches.find((match) => match.source === 'blocklist' && match.applied);
  return {
    recipient,
    accepted: true,
    rejection: null,
    matchedBy: decision.matchedBy,
    domainId: decision.domainId,
    addressId: decision.addressId,
    rules: outcome.matches,
    blocked: outcome.blocked,
    blocklistEntry: blocklisted ? { id: blocklisted.ruleId, emailAddress: blocklisted.name } : null,
    tags: outcome.tags,
    target: outcome.blocked ? null : await targetOf(deps, decision, outcome.routeTo),
  };
}

/** The active endpoint or webhook a delivery job would be queued for, as ingest's writer decides it. */
async function targetOf(
  deps: ExplainDependencies,
  decision: Extract<RouteDecision, { accepted: true }>,
  routeTo: string | null,
): Promise<ExplainTarget | null> {
  const { target } = decision;
  const endpointId = routeTo ?? (target.kind === 'endpoint' ? target.endpointId : null);
  if (endpointId) {
    const endpoint = await deps.findEndpoint(decision.accountId, endpointId);
    return endpoint?.isActive ? { id: endpoint.id, name: endpoint.name, type: endpoint.type } : null;
  }
  if (target.kind === 'webhook') {
    const webhook = await deps.findWebhook(decision.accountId, target.webhookId);
    return webhook?.isActive ? { id: webhook.id, name: webhook.name, type: 'legacy_webhook' } : null;
  }
  return null;
}
