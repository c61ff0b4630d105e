import { sql } from 'kysely';
import { type Clock, Invalid, isoNow, NotFound, newId, type Page, randomHex } from '../core/index.ts';
import { type Db, type EndpointsTable, fromFlag, toFlag } from '../db/index.ts';
import type { DnsLookup } from '../dns/index.ts';
import {
  type DeliveryHistory,
  type DeliveryStats,
  NO_DELIVERIES,
  type RecentDelivery,
  withDeliveryStats,
} from './delivery-history.ts';
import { isVerifiedDomain } from './delivery-targets.ts';
import {
  type ConfigChecks,
  checkDescription,
  checkName,
  ENDPOINT_TYPES,
  type EndpointType,
  normalizeConfig,
  webhookSettings,
} from './endpoint-config.ts';
import { previousSecretAfter } from './secret-rotation.ts';
import { holdRoutingTarget } from './target-hold.ts';
import { assertPublicForwardAddress, assertPublicUrl } from './url-guard.ts';

/** An endpoint or legacy webhook in the short form routing and catch-all show it. */
export interface RoutingTarget {
  id: string;
  name: string;
  /** The endpoint type; null for a legacy webhook. */
  type: EndpointType | null;
  isActive: boolean;
  config: Record<string, unknown>;
}

export interface Endpoint {
  id: string;
  accountId: string;
  name: string;
  type: EndpointType;
  config: Record<string, unknown>;
  isActive: boolean;
  /** Why Mailroom switched the endpoint off (e.g. the receiver answered 410 Gone); null when active or switched off by hand. */
  deactivatedReason: string | null;
  description: string | null;
  groupEmails: string[] | null;
  deliveryStats: DeliveryStats;
  createdAt: string;
  updatedAt: string;
}

export interface EndpointDetail extends Endpoint {
  recentDeliveries: RecentDelivery[];
  associatedEmails: Array<{ id: string; address: string; isActive: boolean; createdAt: string }>;
  catchAllDomains: Array<{ id: string; domain: string; status: string }>;
}

export interface EndpointInput {
  name?: unknown;
  type?: unknown;
  config?: unknown;
  description?: string | null;
}

export interface EndpointUpdate {
  name?: string;
  description?: string | null;
  isActive?: boolean;
  config?: unknown;
}

export interface EndpointListQuery {
  limit: number;
  offset: number;
  type?: EndpointType;
  active?: boolean;
  sortBy?: 'newest' | 'oldest';
  search?: string;
}

export interface EndpointCleanup {
  emailAddresses: string[];
  domains: string[];
  groupEmailsDeleted: number;
}

const RECENT_DELIVERIES = 10;

/** What the endpoints and the legacy webhooks services are built with. */
export interface TargetServiceDeps {
  db: Db;
  clock: Clock;
  dns: Pick<DnsLookup, 'hostAddresses'>;
  allowPrivateDestinations: boolean;
  deliveries: DeliveryHistory;
}

export class EndpointsService {
  private readonly db: Db;
  private readonly clock: Clock;
  private readonly dns: Pick<DnsLookup, 'hostAddresses'>;
  private readonly allowPrivateDestinations: boolean;
  private readonly deliveries: DeliveryHistory;

  constructor(deps: TargetServiceDeps) {
    this.db = deps.db;
    this.clock = deps.clock;
    this.dns = deps.dns;
    this.allowPrivateDestinations = deps.allowPrivateDestinations;
    this.deliveries = deps.deliveries;
  }

  async create(accountId: string, input: EndpointInput): Promise<Endpoint> {
    const present = (value: unknown) => value !== undefined && value !== null && value !== '';
    if (!present(input.name) || !present(input.type) || !present(input.config)) {
      throw new Invalid('Missing required fields', { required: ['name', 'type', 'config'] });
    }
    if (!ENDPOINT_TYPES.includes(input.type as EndpointType)) {
      throw new Invalid('Invalid endpoint type', { validTypes: [...ENDPOINT_TYPES] });
    }
    const type = input.type as EndpointType;
    const name = checkName(String(input.name));
    const description = checkDescription(input.description);
    const config = await normalizeConfig(type, input.config, this.checks(accountId));
    // Receivers check X-Webhook-Verification-Token against this; it lives as long as the endpoint.
    if (type === 'webhook') config.verificationToken = randomHex(32);
    const now = isoNow(this.clock);
    const row: EndpointsTable = {
      id: newId('endp'),
      account_id: accountId,
      name,
      type,
      config: JSON.stringify(config),
      is_active: 1,
      description,
      deactivated_reason: null,
      created_at: now,
      updated_at: now,
    };
    await this.db.insertInto('endpoints').values(row).execute();
    return this.toEndpoint(row, NO_DELIVERIES);
  }

  async list(accountId: string, query: EndpointListQuery): Promise<Page<Endpoint>> {
    let base = this.db.selectFrom('endpoints').where('account_id', '=', accountId);
    if (query.type) base = base.where('type', '=', query.type);
    if (query.active !== undefined) base = base.where('is_active', '=', toFlag(query.active));
    if (query.search) {
      const pattern = `%${query.search.toLowerCase().replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
      base = base.where(sql<boolean>`lower(name) like ${pattern} escape '\\'`);
    }
    const [rows, count] = await Promise.all([
      base
        .selectAll()
        .orderBy('id', query.sortBy === 'oldest' ? 'asc' : 'desc')
        .limit(query.limit)
        .offset(query.offset)
        .execute(),
      base.select((eb) => eb.fn.countAll().as('n')).executeTakeFirstOrThrow(),
    ]);
    return {
      items: await withDeliveryStats(this.deliveries, 'endpoint', rows, (row, stats) => this.toEndpoint(row, stats)),
      total: Number(count.n),
    };
  }

  async get(accountId: string, id: string): Promise<EndpointDetail> {
    const row = await this.ownedRow(accountId, id);
    const [stats, recent, emails, domains] = await Promise.all([
      this.deliveries.stats('endpoint', [row.id]),
      this.deliveries.recent('endpoint', row.id, RECENT_DELIVERIES),
      this.db
        .selectFrom('email_addresses')
        .select(['id', 'address', 'is_active', 'created_at'])
        .where('account_id', '=', accountId)
        .where('endpoint_id', '=', row.id)
        .orderBy('address')
        .execute(),
      this.db
        .selectFrom('domains')
        .select(['id', 'domain', 'status'])
        .where('account_id', '=', accountId)
        .where('catch_all_endpoint_id', '=', row.id)
        .orderBy('domain')
        .execute(),
    ]);
    return {
      ...this.toEndpoint(row, stats.get(row.id) ?? NO_DELIVERIES),
      recentDeliveries: recent,
      associatedEmails: emails.map((email) => ({
        id: email.id,
        address: email.address,
        isActive: fromFlag(email.is_active),
        createdAt: email.created_at,
      })),
      catchAllDomains: domains,
    };
  }

  async update(accountId: string, id: string, update: EndpointUpdate): Promise<Endpoint> {
    const row = await this.ownedRow(accountId, id);
    const changes: Partial<EndpointsTable> = {};
    if (update.name !== undefined) changes.name = checkName(update.name);
    if (update.description !== undefined) changes.description = checkDescription(update.description);
    if (update.isActive !== undefined) {
      changes.is_active = toFlag(update.isActive);
      // The delivery worker records why it switched an endpoint off (410 Gone); a user's switch replaces that.
      changes.deactivated_reason = null;
    }
    if (update.config !== undefined) {
      const config = await normalizeConfig(row.type, update.config, this.checks(accountId));
      const before = JSON.parse(row.config);
      if (row.type === 'webhook') {
        // A config edit replaces the settings but never the token receivers already trust.
        config.verificationToken = before.verificationToken ?? randomHex(32);
        const secret = config.secret as string | undefined;
        Object.assign(changes, previousSecretAfter(before.secret, row, secret, this.clock.now()));
      }
      changes.config = JSON.stringify(config);
    }
    if (Object.keys(changes).length === 0) return this.toEndpoint(row, NO_DELIVERIES);
    const updated = await this.db
      .updateTable('endpoints')
      .set({ ...changes, updated_at: isoNow(this.clock) })
      .where('id', '=', row.id)
      .returningAll()
      .executeTakeFirst();
    // Deleted while the config was checked (its URL's DNS can take seconds).
    if (!updated) throw new NotFound('Endpoint not found');
    return this.toEndpoint(updated, NO_DELIVERIES);
  }

  /**
   * Deletes the endpoint. Its addresses become store-only and domains that used it for catch-all lose it, in the
   * same transaction; its delivery history stays, so past deliveries can still be read and audited.
   */
  async remove(accountId: string, id: string): Promise<EndpointCleanup> {
    const row = await this.ownedRow(accountId, id);
    return this.db.transaction().execute(async (trx) => {
      // First, so that a reference being stored meanwhile (see holdRoutingTarget) is committed before the clearing.
      await trx.deleteFrom('endpoints').where('id', '=', row.id).execute();
      const now = isoNow(this.clock);
      const addresses = await trx
        .updateTable('email_addresses')
        .set({ endpoint_id: null, updated_at: now })
        .where('account_id', '=', accountId)
        .where('endpoint_id', '=', row.id)
        .returning('address')
        .execute();
      const domains = await trx
        .updateTable('domains')
        .set({ is_catch_all_enabled: 0, catch_all_endpoint_id: null, updated_at: now })
        .where('account_id', '=', accountId)
        .where('catch_all_endpoint_id', '=', row.id)
        .returning('domain')
        .execute();
      const config = JSON.parse(row.config);
      return {
        emailAddresses: addresses.map((a) => a.address).sort(),
        domains: domains.map((d) => d.domain).sort(),
        groupEmailsDeleted: row.type === 'email_group' ? config.emails.length : 0,
      };
    });
  }

  /** Throws the configuration's 400 unless `url` may be a webhook's: a test's `overrideUrl` is held to it too. */
  async assertWebhookUrl(url: string): Promise<void> {
    const checked = webhookSettings({ url }).url;
    await assertPublicUrl(checked, { allowPrivate: this.allowPrivateDestinations, dns: this.dns });
  }

  /** The short form domains show for a catch-all endpoint; undefined for unknown and other accounts' ids. */
  async summary(accountId: string, id: string) {
    const target = (await this.targets(accountId, [id])).get(id);
    return target && { id: target.id, name: target.name, type: target.type!, isActive: target.isActive };
  }

  /** Reads the endpoint in `trx`, which stores a reference to it, and keeps it from deletion until that commits. */
  hold(trx: Db, accountId: string, id: string): Promise<{ isActive: boolean } | undefined> {
    return holdRoutingTarget(trx, accountId, 'endpoints', id);
  }

  /** The account's endpoints among `ids`, by id; other accounts' endpoints are absent. */
  async targets(accountId: string, ids: string[]): Promise<Map<string, RoutingTarget>> {
    if (ids.length === 0) return new Map();
    const rows = await this.db
      .selectFrom('endpoints')
      .selectAll()
      .where('account_id', '=', accountId)
      .where('id', 'in', [...new Set(ids)])
      .execute();
    return new Map(
      rows.map((row) => [
        row.id,
        {
          id: row.id,
          name: row.name,
          type: row.type,
          isActive: fromFlag(row.is_active),
          config: JSON.parse(row.config),
        },
      ]),
    );
  }

  private checks(accountId: string): ConfigChecks {
    return {
      assertPublicUrl: (url) => assertPublicUrl(url, { allowPrivate: this.allowPrivateDestinations, dns: this.dns }),
      assertPublicForwardAddress: (address) => assertPublicForwardAddress(address, this.allowPrivateDestinations),
      isVerifiedDomain: (domain) => isVerifiedDomain(this.db, accountId, domain),
    };
  }

  private async ownedRow(accountId: string, id: string): Promise<EndpointsTable> {
    const row = await this.db
      .selectFrom('endpoints')
      .selectAll()
      .where('id', '=', id)
      .where('account_id', '=', accountId)
      .executeTakeFirst();
    if (!row) throw new NotFound('Endpoint not found');
    return row;
  }

  private toEndpoint(row: EndpointsTable, stats: DeliveryStats): Endpoint {
    const config = JSON.parse(row.config);
    return {
      id: row.id,
      accountId: row.account_id,
      name: row.name,
      type: row.type,
      config,
      isActive: fromFlag(row.is_active),
      deactivatedReason: row.deactivated_reason,
      description: row.description,
      groupEmails: row.type === 'email_group' ? config.emails : null,
      deliveryStats: stats,
      createdAt: row.created_at,
      updatedAt: row.updated_at,
    };
  }
}
