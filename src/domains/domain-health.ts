import type { Clock, Logger } from '../core/index.ts';
import { type Db, onPostgres } from '../db/index.ts';
import type { DnsLookup } from '../dns/index.ts';
import { LOOKUP_FAILED } from './dns-records.ts';
import { DomainChecker } from './domain-checker.ts';

/** Verified domains re-checked per claim; a pass claims again until none is due. */
const CLAIM_BATCH = 20;
/** Claims per pass at most, so one pass stays bounded however many domains are due. */
const MAX_CLAIMS = 50;

/** What a scheduled re-check found of a verified domain's required records (its MX and verification TXT). */
export interface DomainRecheck {
  accountId: string;
  domainId: string;
  domain: string;
  /** The required records that no longer match, with what DNS answered; empty when all match. */
  mismatched: Array<{ type: string; name: string; value: string; error: string | null }>;
  /** DNS could not be asked about some record (timeout, SERVFAIL): the outcome says nothing either way. */
  inconclusive: boolean;
  /** When the re-check was claimed, before DNS was asked. */
  checkedAt: string;
}

/** A domain whose mail arrives here: a verified one. */
export interface ReceivingDomain {
  id: string;
  domain: string;
  /** Since when it could receive mail. */
  since: string;
}

/**
 * The domains' side of health alerts: re-checks verified domains on a schedule (each process claims the ones due, so
 * none is checked twice in an interval) and lists the domains that receive mail.
 */
export class DomainHealth {
  readonly #db: Db;
  readonly #clock: Clock;
  readonly #checker: DomainChecker;
  readonly #postgres: boolean;

  constructor(deps: {
    db: Db;
    dns: DnsLookup;
    clock: Clock;
    mxHost: string;
    logger: Logger;
    /** Called after a commit that appended events, to wake this process's event streams. */
    eventsAppended: () => void;
  }) {
    this.#db = deps.db;
    this.#clock = deps.clock;
    this.#postgres = onPostgres(deps.db);
    this.#checker = new DomainChecker(deps);
  }

  /**
   * Re-checks the verified domains not checked for `intervalMs` (a check through the API counts too). Claiming sets
   * `last_dns_check` first, with SKIP LOCKED on PostgreSQL, so processes running this at once take different domains.
   */
  async recheckDue(intervalMs: number): Promise<DomainRecheck[]> {
    const rechecks: DomainRecheck[] = [];
    for (let claim = 0; claim < MAX_CLAIMS; claim++) {
      const rows = await this.#claim(intervalMs);
      for (const row of rows) {
        const checked = await this.#checker.check(row);
        if (!checked) continue;
        const required = checked.records.filter((record) => record.isRequired);
        rechecks.push({
          accountId: row.account_id,
          domainId: row.id,
          domain: row.domain,
          mismatched: required
            .filter((record) => !record.isVerified)
            .map((record) => ({
              type: record.recordType,
              name: record.name,
              value: record.value,
              error: record.lastError,
            })),
          inconclusive: required.some((record) => record.lastError?.startsWith(LOOKUP_FAILED)),
          checkedAt: row.last_dns_check!,
        });
      }
      if (rows.length < CLAIM_BATCH) break;
    }
    return rechecks;
  }

  async #claim(intervalMs: number) {
    const now = this.#clock.now();
    const dueBefore = new Date(now.getTime() - intervalMs).toISOString();
    let due = this.#db
      .selectFrom('domains')
      .select('id')
      .where('status', '=', 'verified')
      .where((eb) => eb.or([eb('last_dns_check', 'is', null), eb('last_dns_check', '<=', dueBefore)]))
      .orderBy('last_dns_check')
      .limit(CLAIM_BATCH);
    if (this.#postgres) due = due.forUpdate().skipLocked();
    return this.#db
      .with('due', () => due)
      .updateTable('domains')
      .set({ last_dns_check: now.toISOString() })
      .where('id', 'in', (eb) => eb.selectFrom('due').select('id'))
      .returningAll()
      .execute();
  }

  /** The account's verified domains, with since when each receives mail. */
  async receiving(accountId: string): Promise<ReceivingDomain[]> {
    const rows = await this.#db
      .selectFrom('domains')
      .select(['id', 'domain', 'verified_at', 'created_at'])
      .where('account_id', '=', accountId)
      .where('status', '=', 'verified')
      .orderBy('id')
      .execute();
    return rows.map((row) => ({ id: row.id, domain: row.domain, since: row.verified_at ?? row.created_at }));
  }

  /** Whether the domain is still the account's and verified (a deleted domain's alert clears). */
  async isVerified(accountId: string, domainId: string): Promise<boolean> {
    const row = await this.#db
      .selectFrom('domains')
      .select('id')
      .where('account_id', '=', accountId)
      .where('id', '=', domainId)
      .where('status', '=', 'verified')
      .executeTakeFirst();
    return row !== undefined;
  }
}
