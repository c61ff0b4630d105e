import { type Clock, isoNow, type Logger } from '../core/index.ts';
import { type Db, type DomainsTable, toFlag } from '../db/index.ts';
import type { DnsLookup } from '../dns/index.ts';
import { appendEvents } from '../events/index.ts';
import { checkRecord, valueForMxHost } from './dns-records.ts';
import { type DnsRecord, type DomainStatus, toRecord, type VerificationCheck } from './domain-model.ts';

/** What the checker reports per check (app.ts hands it the metrics' recorder). */
export interface VerificationObserver {
  /** `verified`: every required record matched. */
  checked(verified: boolean): void;
}

export interface DomainCheckerDeps {
  db: Db;
  dns: DnsLookup;
  clock: Clock;
  mxHost: string;
  logger: Logger;
  /** Called after a commit that appended events (domain.status_changed), to wake this process's event streams. */
  eventsAppended: () => void;
  observer?: VerificationObserver;
}

/**
 * Checks a domain's stored records against live DNS and records the outcome on the records and the domain; every
 * change of a domain's status goes through here, with its event and log line.
 */
export class DomainChecker {
  private readonly db: Db;
  private readonly dns: DnsLookup;
  private readonly clock: Clock;
  private readonly mxHost: string;
  private readonly logger: Logger;
  private readonly eventsAppended: () => void;
  private readonly observer?: VerificationObserver;

  constructor(deps: DomainCheckerDeps) {
    this.db = deps.db;
    this.dns = deps.dns;
    this.clock = deps.clock;
    this.mxHost = deps.mxHost;
    this.logger = deps.logger;
    this.eventsAppended = deps.eventsAppended;
    this.observer = deps.observer;
  }

  async records(domainId: string): Promise<DnsRecord[]> {
    const rows = await this.db
      .selectFrom('dns_records')
      .selectAll()
      .where('domain_id', '=', domainId)
      .orderBy('position')
      .execute();
    return rows.map(toRecord);
  }

  /**
   * Checks the records as the MX host configured now asks for them: a record that named an earlier MX_HOST is
   * rewritten, and the verification token stays. Undefined when the domain was deleted while DNS answered (which
   * can take seconds).
   */
  async check(row: DomainsTable) {
    const records = (await this.records(row.id)).map((record) => ({
      ...record,
      value: valueForMxHost(record, this.mxHost),
    }));
    const results = await Promise.all(records.map((record) => checkRecord(this.dns, record)));
    const now = isoNow(this.clock);
    const checkedRecords = records.map((record, i) => ({
      ...record,
      isVerified: results[i]!.isVerified,
      lastError: results[i]!.error ?? null,
      lastChecked: now,
      updatedAt: now,
    }));
    const required = checkedRecords.filter((record) => record.isRequired);
    const isFullyVerified = required.length > 0 && required.every((record) => record.isVerified);
    this.observer?.checked(isFullyVerified);
    const mxVerified = checkedRecords.some((record) => record.recordType === 'MX' && record.isVerified);
    // A verified domain is never demoted by DNS drift; it only stops being able to receive while its MX is gone.
    const status: DomainStatus = isFullyVerified ? 'verified' : row.status;
    const updated = await this.db.transaction().execute(async (trx) => {
      // The domain's row before its records, in the order a delete locks them: the other order deadlocks with one.
      const domain = await trx
        .updateTable('domains')
        .set({
          status,
          verified_at: status === 'verified' ? (row.verified_at ?? now) : row.verified_at,
          has_mx_records: toFlag(mxVerified),
          can_receive_emails: toFlag(status === 'verified' && mxVerified),
          last_dns_check: now,
          updated_at: now,
        })
        .where('id', '=', row.id)
        .returningAll()
        .executeTakeFirst();
      if (!domain) return undefined;
      for (const record of checkedRecords) {
        await trx
          .updateTable('dns_records')
          .set({
            value: record.value,
            is_verified: toFlag(record.isVerified),
            last_error: record.lastError,
            last_checked: now,
            updated_at: now,
          })
          .where('id', '=', record.id)
          .execute();
      }
      if (status !== row.status) await appendEvents(trx, [domainStatusChanged(row, status)], now);
      return domain;
    });
    if (!updated) return undefined;
    if (updated.status !== row.status) this.statusChanged(row, row.status, updated.status);
    const verificationCheck: VerificationCheck = {
      dnsRecords: checkedRecords.map((record) => ({
        type: record.recordType,
        name: record.name,
        value: record.value,
        isVerified: record.isVerified,
        ...(record.lastError ? { error: record.lastError } : {}),
      })),
      isFullyVerified,
      lastChecked: now,
    };
    return { row: updated, records: checkedRecords, verificationCheck };
  }

  /** Marks a pending domain `failed`, unless it is no longer pending (another process got there first). */
  async giveUp(row: DomainsTable): Promise<void> {
    const now = isoNow(this.clock);
    const gaveUp = await this.db.transaction().execute(async (trx) => {
      const updated = await trx
        .updateTable('domains')
        .set({ status: 'failed', updated_at: now })
        .where('id', '=', row.id)
        .where('status', '=', 'pending')
        .executeTakeFirst();
      if (Number(updated.numUpdatedRows) === 0) return false;
      await appendEvents(trx, [domainStatusChanged(row, 'failed')], now);
      return true;
    });
    if (gaveUp) this.statusChanged(row, 'pending', 'failed');
  }

  private statusChanged(row: DomainsTable, from: DomainStatus, to: DomainStatus) {
    this.eventsAppended();
    this.logger.info({ domainId: row.id, domain: row.domain, from, to }, 'domain status changed');
  }
}

/** The event reporting that a domain's status moved from what `row` holds to `to`. */
function domainStatusChanged(row: Pick<DomainsTable, 'id' | 'account_id' | 'domain' | 'status'>, to: DomainStatus) {
  return {
    accountId: row.account_id,
    type: 'domain.status_changed' as const,
    data: { domainId: row.id, domain: row.domain, from: row.status, to },
  };
}
