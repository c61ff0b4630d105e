import { sql, type Transaction } from 'kysely';
import { type Clock, isoNow } from '../core/index.ts';
import { type AlertsTable, type Database, type Db, onPostgres } from '../db/index.ts';
import type { DomainRecheck } from '../domains/index.ts';
import { clearAlerts, raiseAlert } from './alert-log.ts';
import type { Alert, AlertCondition, AlertKind, AlertSubject } from './alert-model.ts';

const HOUR_MS = 3_600_000;
/** Accounts, or open alerts, claimed for a check at once. */
const CLAIM_BATCH = 50;

/** What alerts learn from the capabilities that own domains, addresses, mail, endpoints and deliveries. */
export interface AlertSources {
  /** Re-checks the verified domains due for it (each process takes different ones). */
  recheckDomains(intervalMs: number): Promise<DomainRecheck[]>;
  /** Whether the domain is still the account's, and verified. */
  domainVerified(accountId: string, domainId: string): Promise<boolean>;
  /** The account's addresses and domains that receive mail, with since when. */
  inboxes(accountId: string): Promise<Array<{ subject: AlertSubject; since: string }>>;
  /** Ids of the account's addresses and domains that received mail at or after `since`. */
  receivedSince(accountId: string, since: string): Promise<Set<string>>;
  /** The endpoint or legacy webhook, if it is still the account's. */
  target(accountId: string, type: 'endpoint' | 'webhook', id: string): Promise<{ isActive: boolean } | undefined>;
  /** Whether one of the target's latest deliveries succeeded at or after `since`. */
  deliveredSince(type: 'endpoint' | 'webhook', id: string, since: string): Promise<boolean>;
}

/** What a change of alerts means to this process: something to announce (events, webhooks). */
export interface AlertChanges {
  raised: Alert[];
  cleared: Alert[];
}

/**
 * The scheduled checks, run by every process: each claims what it checks (domains due, accounts due for the
 * silent-inbox check, open alerts due for a clearing check) so that no two processes do the same work, and raises or
 * clears alerts in transactions of their own.
 */
export class AlertChecks {
  readonly #db: Db;
  readonly #postgres: boolean;
  readonly #clock: Clock;
  readonly #sources: AlertSources;
  readonly #checkIntervalMs: number;
  readonly #dnsCheckIntervalMs: number;

  constructor(deps: {
    db: Db;
    clock: Clock;
    sources: AlertSources;
    checkIntervalMs: number;
    dnsCheckIntervalMs: number;
  }) {
    this.#db = deps.db;
    this.#postgres = onPostgres(deps.db);
    this.#clock = deps.clock;
    this.#sources = deps.sources;
    this.#checkIntervalMs = deps.checkIntervalMs;
    this.#dnsCheckIntervalMs = deps.dnsCheckIntervalMs;
  }

  async run(): Promise<AlertChanges> {
    const changes: AlertChanges = { raised: [], cleared: [] };
    await this.#dnsDrift(changes);
    await this.#silentInboxes(changes);
    await this.#recheckOpen(changes);
    return changes;
  }

  /** Raises or clears, in one transaction, and notes what changed. */
  async change(changes: AlertChanges, work: (trx: Transaction<Database>, now: string) => Promise<AlertChanges>) {
    const done = await this.#db.transaction().execute((trx) => work(trx, isoNow(this.#clock)));
    changes.raised.push(...done.raised);
    changes.cleared.push(...done.cleared);
  }

  /** Raises the condition seen at `observedAt` (see raiseAlert). */
  #raise(changes: AlertChanges, condition: AlertCondition, observedAt: string) {
    return this.change(changes, async (trx, now) => {
      const raised = await raiseAlert(trx, condition, now, observedAt);
      return { raised: raised ? [raised] : [], cleared: [] };
    });
  }

  /** Clears what ended, as seen at `observedAt` (see clearAlerts). */
  #clear(changes: AlertChanges, accountId: string, kind: AlertKind, subjectIds: string[], observedAt: string) {
    if (subjectIds.length === 0) return Promise.resolve();
    return this.change(changes, async (trx, now) => ({
      raised: [],
      cleared: await clearAlerts(trx, { accountId, kind, subjectIds }, now, observedAt),
    }));
  }

  async #dnsDrift(changes: AlertChanges) {
    for (const recheck of await this.#sources.recheckDomains(this.#dnsCheckIntervalMs)) {
      if (recheck.inconclusive) continue;
      if (recheck.mismatched.length === 0) {
        await this.#clear(changes, recheck.accountId, 'dns_drift', [recheck.domainId], recheck.checkedAt);
        continue;
      }
      await this.#raise(
        changes,
        {
          accountId: recheck.accountId,
          kind: 'dns_drift',
          subject: { type: 'domain', id: recheck.domainId, name: recheck.domain },
          details: { mismatchedRecords: recheck.mismatched },
        },
        recheck.checkedAt,
      );
    }
  }

  /**
   * Each account with a silent period, claimed once per check interval: an address or domain is silent when it
   * received nothing for the period, counted from the latest of its last mail, since when it receives, and the clear
   * of its last silent-inbox alert (mail that cleared one starts the period again).
   */
  async #silentInboxes(changes: AlertChanges) {
    for (const account of await this.#claimSilenceChecks()) {
      const observedAt = isoNow(this.#clock);
      const now = Date.parse(observedAt);
      const cutoff = new Date(now - account.silent_after_hours! * HOUR_MS).toISOString();
      const [inboxes, active, { lastCleared, open }] = await Promise.all([
        this.#sources.inboxes(account.account_id),
        this.#sources.receivedSince(account.account_id, cutoff),
        this.#silentInboxAlerts(account.account_id),
      ]);
      const quiet = new Set<string>();
      for (const { subject, since } of inboxes) {
        const from = [since, lastCleared.get(subject.id) ?? ''].sort().at(-1)!;
        if (active.has(subject.id) || from > cutoff) continue;
        quiet.add(subject.id);
        if (open.has(subject.id)) continue;
        await this.#raise(
          changes,
          {
            accountId: account.account_id,
            kind: 'silent_inbox',
            subject,
            details: { silentAfterHours: account.silent_after_hours, quietSince: from },
          },
          observedAt,
        );
      }
      const noLongerQuiet = [...open].filter((id) => !quiet.has(id));
      await this.#clear(changes, account.account_id, 'silent_inbox', noLongerQuiet, observedAt);
    }
  }

  #claimSilenceChecks() {
    const now = this.#clock.now();
    const dueBefore = new Date(now.getTime() - this.#checkIntervalMs).toISOString();
    let due = this.#db
      .selectFrom('alert_settings')
      .select('account_id')
      .where('silent_after_hours', 'is not', null)
      .where((eb) => eb.or([eb('silence_checked_at', 'is', null), eb('silence_checked_at', '<=', dueBefore)]))
      .limit(CLAIM_BATCH);
    if (this.#postgres) due = due.forUpdate().skipLocked();
    return this.#db
      .with('due', () => due)
      .updateTable('alert_settings')
      .set({ silence_checked_at: now.toISOString() })
      .where('account_id', 'in', (eb) => eb.selectFrom('due').select('account_id'))
      .returning(['account_id', 'silent_after_hours'])
      .execute();
  }

  /**
   * Each subject's last cleared silent-inbox alert and those still open, in one query: read apart (on PostgreSQL, on
   * two connections), a clear committed between them by arriving mail showed the alert neither open nor cleared, and
   * the pass raised it again.
   */
  async #silentInboxAlerts(accountId: string): Promise<{ lastCleared: Map<string, string>; open: Set<string> }> {
    const rows = await this.#db
      .selectFrom('alerts')
      .select([
        'subject_id',
        (eb) => eb.fn.max('cleared_at').as('cleared'),
        sql<number | string>`sum(case when cleared_at is null then 1 else 0 end)`.as('open'),
      ])
      .where('account_id', '=', accountId)
      .where('kind', '=', 'silent_inbox')
      .groupBy('subject_id')
      .execute();
    return {
      lastCleared: new Map(rows.flatMap((row) => (row.cleared ? [[row.subject_id, row.cleared] as const] : []))),
      open: new Set(rows.filter((row) => Number(row.open) > 0).map((row) => row.subject_id)),
    };
  }

  /**
   * Open alerts whose condition ends elsewhere, claimed once per check interval: a failed delivery's clears when a
   * later delivery to the endpoint succeeds, a deactivated endpoint's when it is active again, and either when the
   * endpoint is deleted; a drifted domain's when the domain is deleted (its records clear it in #dnsDrift).
   */
  async #recheckOpen(changes: AlertChanges) {
    for (const alert of await this.#claimOpen()) {
      if (await this.#hasEnded(alert)) {
        await this.#clear(changes, alert.account_id, alert.kind as AlertKind, [alert.subject_id], alert.checked_at!);
      }
    }
  }

  async #hasEnded(alert: AlertsTable): Promise<boolean> {
    if (alert.kind === 'dns_drift') return !(await this.#sources.domainVerified(alert.account_id, alert.subject_id));
    const type = alert.subject_type as 'endpoint' | 'webhook';
    const target = await this.#sources.target(alert.account_id, type, alert.subject_id);
    if (!target) return true;
    if (alert.kind === 'endpoint_deactivated' && target.isActive) return true;
    return this.#sources.deliveredSince(type, alert.subject_id, alert.raised_at);
  }

  #claimOpen() {
    const now = this.#clock.now();
    const dueBefore = new Date(now.getTime() - this.#checkIntervalMs).toISOString();
    let due = this.#db
      .selectFrom('alerts')
      .select('id')
      .where('cleared_at', 'is', null)
      .where('kind', 'in', ['dns_drift', 'delivery_failed', 'endpoint_deactivated'])
      .where((eb) => eb.or([eb('checked_at', 'is', null), eb('checked_at', '<=', dueBefore)]))
      .limit(CLAIM_BATCH);
    if (this.#postgres) due = due.forUpdate().skipLocked();
    return this.#db
      .with('due', () => due)
      .updateTable('alerts')
      .set({ checked_at: now.toISOString() })
      .where('id', 'in', (eb) => eb.selectFrom('due').select('id'))
      .returningAll()
      .execute();
  }
}
