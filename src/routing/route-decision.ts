/**
 * Where mail accepted for one recipient goes. `none` means store only: the address has no routing, its endpoint or
 * webhook is switched off (inactive targets receive nothing), or it is dmarc@ mail on a domain that does not route it.
 */
export type RouteTarget =
  | { kind: 'endpoint'; endpointId: string; endpointType: 'webhook' | 'email' | 'email_group' }
  | { kind: 'webhook'; webhookId: string }
  | { kind: 'none' };

/** Why routing refuses a recipient. */
export const REJECT_REASONS = ['unknown_domain', 'unknown_address', 'inactive_address', 'unverified_domain'] as const;
export type RejectReason = (typeof REJECT_REASONS)[number];

/**
 * The routing answer for one envelope recipient. SMTP uses `accepted` to answer RCPT (unknown_domain is a relay
 * attempt, 550 5.7.1; the rest are 550 5.1.1); ingest stores the email under `accountId` and queues `target`.
 */
export type RouteDecision =
  | {
      accepted: false;
      reason: RejectReason;
      /** The account whose registered domain refuses the recipient; absent when no account has the domain. */
      accountId?: string;
    }
  | {
      accepted: true;
      /** The recipient as matched: trimmed, without angle brackets, lower-cased (`postmaster` may have no domain). */
      recipient: string;
      accountId: string;
      /** Null only for `postmaster` without a domain, which no domain receives. */
      domainId: string | null;
      /** The address row that matched (exactly or without its +tag); null for catch-all, dmarc@ and postmaster mail. */
      addressId: string | null;
      /** `subdomain`: the recipient's domain is not registered, and a root above it includes its subdomains. */
      matchedBy: 'address' | 'subaddress' | 'catch_all' | 'dmarc' | 'postmaster' | 'subdomain';
      target: RouteTarget;
    };

export interface RecipientRouter {
  resolve(recipient: string): Promise<RouteDecision>;
}
