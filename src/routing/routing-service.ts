import { normalizeAddress } from '../addresses/index.ts';
import { type Db, type EmailAddressesTable, fromFlag } from '../db/index.ts';
import type { RecipientRouter, RouteDecision, RouteTarget } from './route-decision.ts';

/** The local part that receives the DMARC reports our suggested DMARC record asks for. */
const DMARC_LOCAL_PART = 'dmarc';

type AddressRow = Pick<EmailAddressesTable, 'id' | 'address' | 'is_active' | 'endpoint_id' | 'webhook_id'>;

/**
 * Decides, for one envelope recipient, whether Mailroom accepts the mail and where it goes. The order: an exact
 * address on a verified domain, then the address without its `+tag`, then the domain's catch-all, else reject.
 * An inactive address rejects even when a catch-all exists, because deactivating an address means "refuse it".
 * A target that is switched off (inactive endpoint or webhook) keeps the mail accepted and stored, with no delivery.
 */
export class RoutingService implements RecipientRouter {
  private readonly db: Db;
  private readonly subaddressing: boolean;

  /** `subaddressing` (SUBADDRESSING, on by default) lets `user+tag@` fall back to `user@`. */
  constructor(deps: { db: Db; subaddressing: boolean }) {
    this.db = deps.db;
    this.subaddressing = deps.subaddressing;
  }

  async resolve(recipient: string): Promise<RouteDecision> {
    const parsed = normalizeAddress(recipient);
    if (!parsed) return { accepted: false, reason: 'unknown_address' };
    const domain = await this.db
      .selectFrom('domains')
      .selectAll()
      .where('domain', '=', parsed.domain)
      .executeTakeFirst();
    if (!domain) return { accepted: false, reason: 'unknown_domain' };
    if (domain.status !== 'verified') return { accepted: false, reason: 'unverified_domain' };

    const plus = this.subaddressing ? parsed.local.indexOf('+') : -1;
    const baseLocal = plus > 0 ? parsed.local.slice(0, plus) : parsed.local;
    const accepted = {
      accepted: true as const,
      recipient: parsed.address,
      accountId: domain.account_id,
      domainId: domain.id,
    };

    if (baseLocal === DMARC_LOCAL_PART && !fromFlag(domain.receive_dmarc_emails)) {
      return { ...accepted, addressId: null, matchedBy: 'dmarc', target: { kind: 'none' } };
    }

    const candidates = plus > 0 ? [parsed.address, `${baseLocal}@${parsed.domain}`] : [parsed.address];
    const rows = await this.db
      .selectFrom('email_addresses')
      .select(['id', 'address', 'is_active', 'endpoint_id', 'webhook_id'])
      .where('account_id', '=', domain.account_id)
      .where('domain_id', '=', domain.id)
      .where('address', 'in', candidates)
      .execute();
    const exact = rows.find((row) => row.address === parsed.address);
    const base = rows.find((row) => row.address !== parsed.address);
    const matched = exact ?? base;
    if (matched) {
      if (!fromFlag(matched.is_active)) return { accepted: false, reason: 'inactive_address' };
      return {
        ...accepted,
        addressId: matched.id,
        matchedBy: exact ? 'address' : 'subaddress',
        target: await this.addressTarget(domain.account_id, matched),
      };
    }

    if (fromFlag(domain.is_catch_all_enabled) && domain.catch_all_endpoint_id) {
      return {
        ...accepted,
        addressId: null,
        matchedBy: 'catch_all',
        target: await this.endpointTarget(domain.account_id, domain.catch_all_endpoint_id),
      };
    }
    return { accepted: false, reason: 'unknown_address' };
  }

  private async addressTarget(accountId: string, row: AddressRow): Promise<RouteTarget> {
    if (row.endpoint_id) return this.endpointTarget(accountId, row.endpoint_id);
    if (row.webhook_id) {
      const webhook = await this.db
        .selectFrom('webhooks')
        .select(['id', 'is_active'])
        .where('id', '=', row.webhook_id)
        .where('account_id', '=', accountId)
        .executeTakeFirst();
      if (webhook && fromFlag(webhook.is_active)) return { kind: 'webhook', webhookId: webhook.id };
    }
    return { kind: 'none' };
  }

  private async endpointTarget(accountId: string, endpointId: string): Promise<RouteTarget> {
    const endpoint = await this.db
      .selectFrom('endpoints')
      .select(['id', 'type', 'is_active'])
      .where('id', '=', endpointId)
      .where('account_id', '=', accountId)
      .executeTakeFirst();
    if (!endpoint || !fromFlag(endpoint.is_active)) return { kind: 'none' };
    return { kind: 'endpoint', endpointId: endpoint.id, endpointType: endpoint.type };
  }
}
