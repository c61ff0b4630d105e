import { type Clock, Conflict, Invalid, isoNow, NotFound, newId, randomHex } from '../core/index.ts';
import { type Db, type DomainsTable, fromFlag, toFlag } from '../db/index.ts';
import type { DnsLookup } from '../dns/index.ts';
import { findDnsConflict, mxRecord, type PlannedRecord, plannedRecords, wildcardMxRecord } from './dns-records.ts';
import { DomainChecker, type DomainCheckerDeps } from './domain-checker.ts';
import {
  type CatchAllUpdate,
  type CreatedDomain,
  type DnsRecord,
  type Domain,
  type DomainDetail,
  type DomainListQuery,
  type DomainStatus,
  type DomainsSettings,
  type EndpointDirectory,
  toDomain,
  type VerificationCheck,
} from './domain-model.ts';
import { normalizeDomainName } from './domain-name.ts';
import {
  assertAvailable,
  assertMayIncludeSubdomains,
  assertNoDependentSubdomains,
  assertWithinDomainLimit,
  holdVerifiedParent,
  lockForDelete,
  nearestVerifiedAncestor,
} from './domain-ownership.ts';
import { detectProvider } from './provider-detection.ts';

function isUniqueViolation(error: unknown): boolean {
  const e = error as { code?: string; message?: string };
  return e.code === '23505' || /UNIQUE constraint failed/i.test(e.message ?? '');
}

export class DomainsService {
  private readonly db: Db;
  private readonly dns: DnsLookup;
  private readonly clock: Clock;
  private readonly settings: DomainsSettings;
  private readonly endpoints: EndpointDirectory;
  private readonly checker: DomainChecker;

  constructor(deps: Omit<DomainCheckerDeps, 'mxHost'> & { settings: DomainsSettings; endpoints: EndpointDirectory }) {
    this.db = deps.db;
    this.dns = deps.dns;
    this.clock = deps.clock;
    this.settings = deps.settings;
    this.endpoints = deps.endpoints;
    this.checker = new DomainChecker({ ...deps, mxHost: deps.settings.mxHost });
  }

  async list(
    accountId: string,
    query: DomainListQuery,
  ): Promise<{ domains: Array<{ domain: DomainDetail; verificationCheck?: VerificationCheck }>; total: number }> {
    let base = this.db.selectFrom('domains').where('account_id', '=', accountId);
    if (query.status) base = base.where('status', '=', query.status);
    if (query.canReceive !== undefined) base = base.where('can_receive_emails', '=', toFlag(query.canReceive));
    const [rows, count] = await Promise.all([
      base.selectAll().orderBy('id', 'desc').limit(query.limit).offset(query.offset).execute(),
      base.select((eb) => eb.fn.countAll().as('n')).executeTakeFirstOrThrow(),
    ]);
    const domains = await Promise.all(
      rows.map(async (row) => {
        if (!query.check) return [{ domain: await this.detail(row) }];
        const checked = await this.checker.check(row);
        // Deleted while DNS answered: no longer the account's to list.
        if (!checked) return [];
        return [{ domain: await this.detail(checked.row), verificationCheck: checked.verificationCheck }];
      }),
    );
    return { domains: domains.flat(), total: Number(count.n) };
  }

  /** Account-wide counts for the v2 list's `meta`. */
  async summary(accountId: string): Promise<Record<DomainStatus, number> & { withCatchAll: number }> {
    const rows = await this.db
      .selectFrom('domains')
      .select([
        'status',
        (eb) => eb.fn.countAll().as('n'),
        (eb) => eb.fn.sum<number | string>('is_catch_all_enabled').as('catchAll'),
      ])
      .where('account_id', '=', accountId)
      .groupBy('status')
      .execute();
    const summary = { pending: 0, verified: 0, failed: 0, withCatchAll: 0 };
    for (const row of rows) {
      summary[row.status] = Number(row.n);
      summary.withCatchAll += Number(row.catchAll);
    }
    return summary;
  }

  async create(accountId: string, name: unknown): Promise<CreatedDomain> {
    if (typeof name !== 'string' || name.trim() === '') throw new Invalid('Domain is required');
    const domainName = normalizeDomainName(name);
    if (!domainName) throw new Invalid('Invalid domain format');

    await assertWithinDomainLimit(this.db, accountId);
    // Null when the parent it would inherit from was deleted meanwhile: without it, the name is decided again.
    for (;;) {
      const created = await this.createUnder(accountId, domainName);
      if (created) return created;
    }
  }

  private async createUnder(accountId: string, domainName: string): Promise<CreatedDomain | null> {
    const parent = await nearestVerifiedAncestor(this.db, domainName);
    // Under a verified parent of this account, another account's unverified claim on the name gives way.
    const displaced = await assertAvailable(this.db, accountId, domainName, {
      mayDisplaceUnverified: parent?.account_id === accountId,
      abandonedBefore: this.giveUpBefore(),
    });
    if (parent && parent.account_id !== accountId) {
      throw new Conflict('Domain belongs to another account', { code: 'DOMAIN_BELONGS_TO_ANOTHER_ACCOUNT' });
    }
    const [provider, dnsConflict] = await Promise.all([
      detectProvider(this.dns, domainName).catch(() => undefined),
      findDnsConflict(this.dns, domainName, this.settings.mxHost),
    ]);
    const now = isoNow(this.clock);
    const token = parent ? null : randomHex(24);
    const row: DomainsTable = {
      id: newId('dom'),
      account_id: accountId,
      domain: domainName,
      status: parent ? 'verified' : 'pending',
      verification_token: token,
      parent_domain_id: parent?.id ?? null,
      can_receive_emails: 0,
      has_mx_records: 0,
      domain_provider: provider?.name ?? null,
      provider_confidence: provider?.confidence ?? null,
      last_dns_check: null,
      is_catch_all_enabled: 0,
      catch_all_endpoint_id: null,
      receive_dmarc_emails: 0,
      include_subdomains: 0,
      verified_at: parent ? now : null,
      created_at: now,
      updated_at: now,
    };
    const planned: PlannedRecord[] = parent
      ? [mxRecord(domainName, this.settings.mxHost)]
      : plannedRecords(domainName, this.settings.mxHost, token!);
    try {
      const stored = await this.db.transaction().execute(async (trx) => {
        await assertWithinDomainLimit(trx, accountId, true);
        if (parent && !(await holdVerifiedParent(trx, parent.id))) return false;
        if (displaced) {
          // Only while still unverified; had it been verified meanwhile, the insert's unique violation says so.
          const deleted = await trx
            .deleteFrom('domains')
            .where('id', '=', displaced)
            .where('status', '!=', 'verified')
            .executeTakeFirst();
          if (Number(deleted.numDeletedRows) > 0) {
            await trx.deleteFrom('email_addresses').where('domain_id', '=', displaced).execute();
            await trx.deleteFrom('dns_records').where('domain_id', '=', displaced).execute();
          }
        }
        await trx.insertInto('domains').values(row).execute();
        await trx
          .insertInto('dns_records')
          .values(
            planned.map((record, position) => ({
              id: newId('dns'),
              domain_id: row.id,
              position,
              record_type: record.recordType,
              name: record.name,
              value: record.value,
              priority: record.priority,
              description: record.description,
              is_required: toFlag(record.isRequired),
              is_verified: 0 as const,
              last_checked: null,
              last_error: null,
              created_at: now,
              updated_at: now,
            })),
          )
          .execute();
        return true;
      });
      if (!stored) return null;
    } catch (error) {
      if (isUniqueViolation(error)) {
        // Another request took the name meanwhile: say whose it is, and displace nothing now.
        await assertAvailable(this.db, accountId, domainName, {
          mayDisplaceUnverified: false,
          abandonedBefore: this.giveUpBefore(),
        });
      }
      throw error;
    }
    const checked = await this.checker.check(row);
    if (!checked) throw new NotFound('Domain not found');
    return {
      domain: toDomain(checked.row, parent?.domain ?? null),
      records: checked.records,
      dnsConflict,
      message: parent
        ? `Subdomain inherits verification from ${parent.domain}. Add the MX record to start receiving email.`
        : 'Domain added. Add the DNS records below, then check verification with GET /domains/{id}?check=true.',
    };
  }

  async get(accountId: string, id: string, options: { check?: boolean } = {}) {
    let row = await this.ownedRow(accountId, id);
    let verificationCheck: VerificationCheck | undefined;
    let records: DnsRecord[];
    if (options.check) {
      const checked = await this.checker.check(row);
      if (!checked) throw new NotFound('Domain not found');
      row = checked.row;
      records = checked.records;
      verificationCheck = checked.verificationCheck;
    } else {
      records = await this.checker.records(row.id);
    }
    return { domain: await this.detail(row), records, verificationCheck };
  }

  async dnsRecords(accountId: string, id: string): Promise<{ domain: Domain; records: DnsRecord[] }> {
    const row = await this.ownedRow(accountId, id);
    return { domain: toDomain(row, await this.parentName(row)), records: await this.checker.records(row.id) };
  }

  /**
   * Configures the catch-all and whether it also covers subdomains; a field left out keeps its value. With
   * `includeSubdomains` on, the answer carries the wildcard MX record that points the subdomains' mail here.
   */
  async updateCatchAll(
    accountId: string,
    id: string,
    update: CatchAllUpdate,
  ): Promise<{ domain: DomainDetail; wildcardMxRecord: PlannedRecord | null }> {
    const row = await this.ownedRow(accountId, id);
    const changes: Partial<DomainsTable> = { updated_at: isoNow(this.clock) };
    const updated = await this.db.transaction().execute(async (trx) => {
      if (update.isCatchAllEnabled !== undefined) {
        // An empty id names no endpoint: it means none, as the field left blank in a form does.
        let endpointId =
          update.catchAllEndpointId === undefined ? row.catch_all_endpoint_id : update.catchAllEndpointId || null;
        // Held until the commit, so that the endpoint's delete cannot miss the reference stored here.
        const endpoint = endpointId ? await this.endpoints.hold(trx, accountId, endpointId) : undefined;
        if (update.isCatchAllEnabled) {
          if (row.status !== 'verified') throw new Invalid('Domain must be verified before configuring catch-all');
          // Without an endpoint, the catch-all accepts every address's mail and stores it.
          if (endpointId) {
            if (!endpoint) throw new Invalid('Endpoint not found or does not belong to user');
            if (!endpoint.isActive) throw new Invalid('Selected endpoint is not active');
          }
        } else if (!endpoint) {
          endpointId = null;
        }
        changes.is_catch_all_enabled = toFlag(update.isCatchAllEnabled);
        changes.catch_all_endpoint_id = endpointId;
      }
      if (update.includeSubdomains !== undefined) {
        if (update.includeSubdomains) await assertMayIncludeSubdomains(trx, row);
        changes.include_subdomains = toFlag(update.includeSubdomains);
      }
      return trx.updateTable('domains').set(changes).where('id', '=', row.id).returningAll().executeTakeFirst();
    });
    if (!updated) throw new NotFound('Domain not found');
    return {
      domain: await this.detail(updated),
      wildcardMxRecord: fromFlag(updated.include_subdomains)
        ? wildcardMxRecord(updated.domain, this.settings.mxHost)
        : null,
    };
  }

  async remove(accountId: string, id: string) {
    return this.db.transaction().execute(async (trx) => {
      // Locked first, so that no subdomain or address can come to depend on it between these checks and the delete.
      const row = await lockForDelete(trx, accountId, id);
      if (!row) throw new NotFound('Domain not found');
      await assertNoDependentSubdomains(trx, row);
      // A hold lives on its row: deleting the row would let the mail it keeps expire by the account's period.
      const held = await trx
        .selectFrom('email_addresses')
        .select('address')
        .where('domain_id', '=', row.id)
        .where('legal_hold', '=', 1)
        .orderBy('address')
        .executeTakeFirst();
      if (fromFlag(row.legal_hold ?? 0) || held) {
        const what = held ? `its address ${held.address} is` : 'it is';
        throw new Conflict(
          `Cannot delete ${row.domain}: ${what} under a legal hold, which keeps its mail. Lift the hold first.`,
          { code: 'LEGAL_HOLD' },
        );
      }
      const addresses = await trx.deleteFrom('email_addresses').where('domain_id', '=', row.id).executeTakeFirst();
      const records = await trx.deleteFrom('dns_records').where('domain_id', '=', row.id).executeTakeFirst();
      await trx.deleteFrom('domains').where('id', '=', row.id).execute();
      return {
        domain: row.domain,
        emailAddresses: Number(addresses.numDeletedRows),
        dnsRecords: Number(records.numDeletedRows),
      };
    });
  }

  /**
   * Re-checks every pending domain. One still unverified `giveUpAfterMs` after creation becomes `failed`; failed
   * domains are not re-checked here, only by an explicit `check=true`, which can still verify them. An aborted
   * `signal` (the server stopping) ends the pass before the next domain: each check may wait out DNS timeouts.
   */
  async verifyPending(signal?: AbortSignal): Promise<{ checked: number; verified: number; failed: number }> {
    const rows = await this.db.selectFrom('domains').selectAll().where('status', '=', 'pending').execute();
    const giveUpBefore = this.giveUpBefore();
    let verified = 0;
    let failed = 0;
    for (const row of rows) {
      if (signal?.aborted) break;
      const checked = await this.checker.check(row);
      if (!checked) continue;
      const after = checked.row;
      if (after.status === 'verified') verified++;
      else if (after.created_at < giveUpBefore) {
        await this.checker.giveUp(after);
        failed++;
      }
    }
    return { checked: rows.length, verified, failed };
  }

  /** Created before this and still not verified, a domain is one verification gave up on. */
  private giveUpBefore(): string {
    return new Date(this.clock.now().getTime() - this.settings.giveUpAfterMs).toISOString();
  }

  private async detail(row: DomainsTable): Promise<DomainDetail> {
    const [addresses, parentName, catchAllEndpoint] = await Promise.all([
      this.db
        .selectFrom('email_addresses')
        .select([
          (eb) => eb.fn.countAll().as('total'),
          (eb) => eb.fn.sum<number | string | null>('is_active').as('active'),
        ])
        .where('domain_id', '=', row.id)
        .executeTakeFirstOrThrow(),
      this.parentName(row),
      row.catch_all_endpoint_id ? this.endpoints.summary(row.account_id, row.catch_all_endpoint_id) : undefined,
    ]);
    return {
      ...toDomain(row, parentName),
      stats: { totalEmailAddresses: Number(addresses.total), activeEmailAddresses: Number(addresses.active ?? 0) },
      catchAllEndpoint: catchAllEndpoint ?? null,
    };
  }

  private async parentName(row: DomainsTable): Promise<string | null> {
    if (!row.parent_domain_id) return null;
    const parent = await this.db
      .selectFrom('domains')
      .select('domain')
      .where('id', '=', row.parent_domain_id)
      .executeTakeFirst();
    return parent?.domain ?? null;
  }

  private async ownedRow(accountId: string, id: string): Promise<DomainsTable> {
    const row = await this.db
      .selectFrom('domains')
      .selectAll()
      .where('id', '=', id)
      .where('account_id', '=', accountId)
      .executeTakeFirst();
    if (!row) throw new NotFound('Domain not found');
    return row;
  }
}
