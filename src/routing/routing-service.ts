import { type AddressParts, normalizeAddress } from '../addresses/index.ts';
import type { Logger } from '../core/index.ts';
import { type Db, fromFlag, listenForNotifications, preparedQuery } from '../db/index.ts';
import { DecisionCache } from './decision-cache.ts';
import type { RecipientRouter, RejectReason, RouteDecision, RouteTarget } from './route-decision.ts';
import type { RoutingWritesPlugin } from './routing-writes.ts';

/** The local part that receives the DMARC reports our suggested DMARC record asks for. */
const DMARC_LOCAL_PART = 'dmarc';
/** RFC 5321 §4.5.1: every domain that receives mail must accept it for postmaster. */
const POSTMASTER_LOCAL_PART = 'postmaster';
/** The one recipient that may come without a domain (RFC 5321 §4.1.1.3), in any case. */
const BARE_POSTMASTER = /^\s*<?postmaster>?\s*$/i;

/**
 * Everything one recipient's decision needs, read in one query: the domain, the address rows among the candidates
 * (the address itself and, with a `+tag`, the address without it; the same address twice without one), their endpoint
 * or webhook, and the domain's catch-all endpoint. One row per matching address, or one row with no address. Besides,
 * one row, with no address, for each domain above it among `names` that includes its subdomains. Targets count only
 * in the domain's account, as everything an account owns does.
 */
const routingRows = preparedQuery(
  (
    db,
    { domain, names, address, baseAddress }: { domain: string; names: string[]; address: string; baseAddress: string },
  ) =>
    db
      .selectFrom('domains as d')
      .leftJoin('email_addresses as a', (join) =>
        join
          .onRef('a.domain_id', '=', 'd.id')
          .onRef('a.account_id', '=', 'd.account_id')
          .on('a.address', 'in', [address, baseAddress]),
      )
      .leftJoin('endpoints as e', (join) =>
        join.onRef('e.id', '=', 'a.endpoint_id').onRef('e.account_id', '=', 'd.account_id'),
      )
      .leftJoin('webhooks as w', (join) =>
        join.onRef('w.id', '=', 'a.webhook_id').onRef('w.account_id', '=', 'd.account_id'),
      )
      .leftJoin('endpoints as c', (join) =>
        join.onRef('c.id', '=', 'd.catch_all_endpoint_id').onRef('c.account_id', '=', 'd.account_id'),
      )
      .select([
        'd.id as domain_id',
        'd.domain',
        'd.account_id',
        'd.status',
        'd.receive_dmarc_emails',
        'd.is_catch_all_enabled',
        'd.catch_all_endpoint_id',
        'a.id as address_id',
        'a.address',
        'a.is_active as address_active',
        'a.endpoint_id',
        'e.type as endpoint_type',
        'e.is_active as endpoint_active',
        'a.webhook_id',
        'w.id as webhook_found',
        'w.is_active as webhook_active',
        'c.type as catch_all_type',
        'c.is_active as catch_all_active',
      ])
      .where('d.domain', 'in', names)
      .where((eb) => eb.or([eb('d.domain', '=', domain), eb('d.include_subdomains', '=', 1)])),
  // Configuration tables, found by unique names: PostgreSQL's parsing and planning cost more than running it.
  { named: true },
);

type RoutingRow = Awaited<ReturnType<typeof routingRows>>[number];

const routingVersion = preparedQuery((db, _: Record<string, never>) =>
  db.selectFrom('routing_version').select('version').where('id', '=', 1),
);

/**
 * Decides, for one envelope recipient, whether Mailroom accepts the mail and where it goes. The order: an exact
 * address on a verified domain, then the address without its `+tag`, then the domain's catch-all, else reject.
 * An inactive address rejects even when a catch-all exists, because deactivating an address means "refuse it".
 * A domain not registered itself is accepted only under a verified root that includes its subdomains (no open relay).
 * A target that is switched off (inactive endpoint or webhook) keeps the mail accepted and stored, with no delivery.
 * It runs on the event loop for every RCPT, so it reads all it needs in one query, and keeps each decision until
 * routing changes (see DecisionCache). On SQLite a RCPT reads one counter instead (migration 0014): with ingest's
 * writer committing all the time, each query starts on an emptied page cache and pays for its five lookups. On
 * PostgreSQL any read is a round trip, whose socket calls and result cost the event loop more than the query costs
 * the database; there the decisions are dropped when a change is announced (migration 0023), or written by this
 * process (RoutingWritesPlugin), and none is kept while announcements cannot be heard.
 */
export class RoutingService implements RecipientRouter {
  private readonly db: Db;
  private readonly subaddressing: boolean;
  private readonly decisions = new DecisionCache();
  private readonly postgres: { url: string; schema: string } | undefined;
  private readonly logger: Logger;
  private readonly operatorAccountId: () => Promise<string | undefined>;
  /** PostgreSQL: routing changes heard of, and whether they can be heard (the listening connection is up). */
  private changesHeard = 0;
  private hearing = false;
  private listener: ReturnType<typeof listenForNotifications> | undefined;

  /**
   * `subaddressing` (SUBADDRESSING, on by default) lets `user+tag@` fall back to `user@`. `postgres`: the server
   * routing changes are announced on, and the plugin `db` runs that sees this process's own. `operatorAccountId`:
   * the account of whoever runs the installation, which receives mail to `postmaster` without a domain.
   */
  constructor(deps: {
    db: Db;
    subaddressing: boolean;
    logger: Logger;
    operatorAccountId: () => Promise<string | undefined>;
    postgres?: { url: string; schema: string; writes: RoutingWritesPlugin };
  }) {
    this.db = deps.db;
    this.subaddressing = deps.subaddressing;
    this.logger = deps.logger;
    this.operatorAccountId = deps.operatorAccountId;
    this.postgres = deps.postgres && { url: deps.postgres.url, schema: deps.postgres.schema };
    deps.postgres?.writes.onWrite(() => this.routingChanged());
  }

  /** PostgreSQL: starts listening for routing changes; decisions are kept from then on. */
  async start(): Promise<void> {
    if (!this.postgres) return;
    this.listener = listenForNotifications({
      url: this.postgres.url,
      channel: `mailroom_routing_${this.postgres.schema}`,
      purpose: 'routing changes',
      logger: this.logger,
      onNotify: () => this.routingChanged(),
      onListening: (listening) => {
        // Changes made while it was not listening went unheard: everything kept before is dropped.
        this.hearing = listening;
        this.routingChanged();
      },
    });
    await this.listener.ready;
  }

  async stop(): Promise<void> {
    this.hearing = false;
    await this.listener?.close();
  }

  /** Routing changed: drops every decision kept (on PostgreSQL; SQLite's counter moves by itself). */
  routingChanged(): void {
    this.changesHeard++;
  }

  async resolve(recipient: string): Promise<RouteDecision> {
    if (BARE_POSTMASTER.test(recipient)) return this.decideForOperator();
    const parsed = normalizeAddress(recipient);
    if (!parsed) return { accepted: false, reason: 'unknown_address' };
    // Read before the rows a new decision is made from (see DecisionCache).
    const version = this.postgres ? (this.hearing ? this.changesHeard : undefined) : await this.sqliteVersion();
    if (version === undefined) return this.decide(parsed);
    const kept = this.decisions.get(version, parsed.address);
    if (kept) return kept;
    const decision = await this.decide(parsed);
    this.decisions.set(version, parsed.address, decision);
    return decision;
  }

  /**
   * `postmaster` without a domain addresses whoever runs the server the sender is talking to (RFC 5321 §4.1.1.3
   * requires accepting it), not any one domain's owner: stored only, for the operator's account. Rare enough to
   * read the account each time rather than keep the decision.
   */
  private async decideForOperator(): Promise<RouteDecision> {
    const accountId = await this.operatorAccountId();
    if (!accountId) return { accepted: false, reason: 'unknown_address' };
    return {
      accepted: true,
      recipient: POSTMASTER_LOCAL_PART,
      accountId,
      domainId: null,
      addressId: null,
      matchedBy: 'postmaster',
      target: { kind: 'none' },
    };
  }

  private async sqliteVersion(): Promise<number> {
    return (await routingVersion(this.db, {}))[0]!.version;
  }

  private async decide(parsed: AddressParts): Promise<RouteDecision> {
    const plus = this.subaddressing ? parsed.local.indexOf('+') : -1;
    const baseLocal = plus > 0 ? parsed.local.slice(0, plus) : parsed.local;
    const baseAddress = plus > 0 ? `${baseLocal}@${parsed.domain}` : parsed.address;
    const found = await routingRows(this.db, {
      domain: parsed.domain,
      names: withEnclosingDomains(parsed.domain),
      address: parsed.address,
      baseAddress,
    });
    const rows = found.filter((row) => row.domain === parsed.domain);
    const domain = rows[0];
    if (!domain) return decideForSubdomain(parsed.address, found);
    const refused = (reason: RejectReason): RouteDecision => ({
      accepted: false,
      reason,
      accountId: domain.account_id,
    });
    if (domain.status !== 'verified') return refused('unverified_domain');

    const accepted = {
      accepted: true as const,
      recipient: parsed.address,
      accountId: domain.account_id,
      domainId: domain.domain_id,
    };

    if (baseLocal === DMARC_LOCAL_PART && !fromFlag(domain.receive_dmarc_emails)) {
      return { ...accepted, addressId: null, matchedBy: 'dmarc', target: { kind: 'none' } };
    }
    const postmaster = {
      ...accepted,
      addressId: null,
      matchedBy: 'postmaster' as const,
      target: { kind: 'none' as const },
    };

    const exact = rows.find((row) => row.address === parsed.address);
    const base = rows.find((row) => row.address !== null && row.address !== parsed.address);
    const matched = exact ?? base;
    if (matched?.address_id) {
      if (!fromFlag(matched.address_active!)) {
        // Switching postmaster@ off stops its deliveries, but RFC 5321 §4.5.1 does not let it refuse mail.
        return parsed.local === POSTMASTER_LOCAL_PART ? postmaster : refused('inactive_address');
      }
      return {
        ...accepted,
        addressId: matched.address_id,
        matchedBy: exact ? 'address' : 'subaddress',
        target: addressTarget(matched),
      };
    }

    if (fromFlag(domain.is_catch_all_enabled)) {
      return {
        ...accepted,
        addressId: null,
        matchedBy: 'catch_all',
        target: domain.catch_all_endpoint_id
          ? endpointTarget(domain.catch_all_endpoint_id, domain.catch_all_type, domain.catch_all_active)
          : { kind: 'none' },
      };
    }
    if (parsed.local === POSTMASTER_LOCAL_PART) return postmaster;
    return refused('unknown_address');
  }
}

/**
 * A recipient on a domain not registered itself, under a verified root that includes its subdomains: accepted for
 * the root, and sent to its catch-all endpoint, or stored only when the root has none.
 */
function decideForSubdomain(recipient: string, enclosing: RoutingRow[]): RouteDecision {
  // Only root domains include their subdomains, so at most one enclosing domain does.
  const root = enclosing.find((row) => row.status === 'verified');
  if (!root) return { accepted: false, reason: 'unknown_domain' };
  return {
    accepted: true,
    recipient,
    accountId: root.account_id,
    domainId: root.domain_id,
    addressId: null,
    matchedBy: 'subdomain',
    target:
      fromFlag(root.is_catch_all_enabled) && root.catch_all_endpoint_id
        ? endpointTarget(root.catch_all_endpoint_id, root.catch_all_type, root.catch_all_active)
        : { kind: 'none' },
  };
}

/** `domain` and the names of two labels or more above it: `a.b.example.com`, `b.example.com`, `example.com`. */
function withEnclosingDomains(domain: string): string[] {
  const enclosing = [domain];
  for (let dot = domain.indexOf('.'); domain.indexOf('.', dot + 1) !== -1; dot = domain.indexOf('.', dot + 1)) {
    enclosing.push(domain.slice(dot + 1));
  }
  return enclosing;
}

function addressTarget(row: RoutingRow): RouteTarget {
  if (row.endpoint_id) return endpointTarget(row.endpoint_id, row.endpoint_type, row.endpoint_active);
  if (row.webhook_found && fromFlag(row.webhook_active!)) return { kind: 'webhook', webhookId: row.webhook_found };
  return { kind: 'none' };
}

/** `type` and `active` are both null when the endpoint is gone (or in another account). */
function endpointTarget(
  endpointId: string,
  type: RoutingRow['endpoint_type'],
  active: RoutingRow['endpoint_active'],
): RouteTarget {
  if (!type || !fromFlag(active!)) return { kind: 'none' };
  return { kind: 'endpoint', endpointId, endpointType: type };
}
