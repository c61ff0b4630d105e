import { randomBytes } from 'node:crypto';
import type { Transaction } from 'kysely';
import { type Clock, Invalid, isoNow, type Logger, NotFound, type Page } from '../core/index.ts';
import type { Database, Db } from '../db/index.ts';
import type { FailedDelivery } from '../delivery/index.ts';
import { signingSecretProblem } from '../endpoints/index.ts';
import type { AlertChanges, AlertChecks } from './alert-checks.ts';
import { clearAlerts, raiseAlert } from './alert-log.ts';
import { type Alert, type AlertSettings, toAlert } from './alert-model.ts';
import type { AlertNotifier } from './alert-notifier.ts';

/** The longest silent period: a year. */
const MAX_SILENT_HOURS = 8760;

export interface AlertSettingsChange {
  endpointUrl?: string | null;
  secret?: string;
  silentAfterHours?: number | null;
}

/** The mail just stored, as far as silent inboxes care. */
export interface ArrivedMail {
  accountId: string;
  domainId: string | null;
  addressId: string | null;
}

/**
 * Health alerts: the account's settings and list, acknowledgement, and the ways conditions reach it: the scheduled
 * checks (`check`), delivery's failed ends (`deliveryFailures`, in delivery's own transaction) and stored mail
 * (`mailArrived`, which clears a silent inbox's alert at once). Every raise and clear commits with its event and
 * webhook; afterwards the event streams are woken and the webhooks sent.
 */
export class AlertsService {
  readonly #db: Db;
  readonly #clock: Clock;
  readonly #checks: AlertChecks;
  readonly #notifier: AlertNotifier;
  readonly #assertPublicUrl: (url: string) => Promise<void>;
  readonly #eventsAppended: () => void;
  readonly #logger: Logger;
  /** Subjects with an open silent-inbox alert, as this process last saw them: arriving mail for others costs nothing. */
  #quietSubjects = new Set<string>();
  /** Clears started by arriving mail, still running. */
  readonly #clearing = new Set<Promise<void>>();

  constructor(deps: {
    db: Db;
    clock: Clock;
    checks: AlertChecks;
    notifier: AlertNotifier;
    /** The SSRF rule for the alert endpoint (Invalid when it points at an internal address). */
    assertPublicUrl: (url: string) => Promise<void>;
    eventsAppended: () => void;
    logger: Logger;
  }) {
    this.#db = deps.db;
    this.#clock = deps.clock;
    this.#checks = deps.checks;
    this.#notifier = deps.notifier;
    this.#assertPublicUrl = deps.assertPublicUrl;
    this.#eventsAppended = deps.eventsAppended;
    this.#logger = deps.logger;
  }

  async settings(accountId: string): Promise<AlertSettings> {
    const row = await this.#db
      .selectFrom('alert_settings')
      .selectAll()
      .where('account_id', '=', accountId)
      .executeTakeFirst();
    return {
      endpointUrl: row?.endpoint_url ?? null,
      secret: row?.secret ?? null,
      silentAfterHours: row?.silent_after_hours ?? null,
    };
  }

  /** Changes the given fields; a silent period changed is checked at the next pass, one switched off clears its alerts. */
  async updateSettings(accountId: string, change: AlertSettingsChange): Promise<AlertSettings> {
    const { endpointUrl, secret, silentAfterHours } = change;
    if (endpointUrl !== undefined && endpointUrl !== null) {
      if (!URL.canParse(endpointUrl) || !/^https?:$/.test(new URL(endpointUrl).protocol)) {
        throw new Invalid('endpointUrl must be an http or https URL');
      }
      await this.#assertPublicUrl(endpointUrl);
    }
    if (secret !== undefined && secret.length < 16) throw new Invalid('secret must be at least 16 characters');
    const secretProblem = secret === undefined ? undefined : signingSecretProblem(secret);
    if (secretProblem) throw new Invalid(secretProblem);
    if (
      silentAfterHours !== undefined &&
      silentAfterHours !== null &&
      (!Number.isInteger(silentAfterHours) || silentAfterHours < 1 || silentAfterHours > MAX_SILENT_HOURS)
    ) {
      throw new Invalid(`silentAfterHours must be a whole number of hours from 1 to ${MAX_SILENT_HOURS}, or null`);
    }
    const current = await this.settings(accountId);
    const next: AlertSettings = {
      endpointUrl: endpointUrl === undefined ? current.endpointUrl : endpointUrl,
      secret: secret ?? current.secret ?? `whsec_${randomBytes(24).toString('base64')}`,
      silentAfterHours: silentAfterHours === undefined ? current.silentAfterHours : silentAfterHours,
    };
    const now = isoNow(this.#clock);
    const changes: AlertChanges = { raised: [], cleared: [] };
    await this.#checks.change(changes, async (trx) => {
      const row = {
        endpoint_url: next.endpointUrl,
        secret: next.secret!,
        silent_after_hours: next.silentAfterHours,
        ...(silentAfterHours === undefined ? {} : { silence_checked_at: null }),
        updated_at: now,
      };
      await trx
        .insertInto('alert_settings')
        .values({ account_id: accountId, silence_checked_at: null, ...row })
        .onConflict((conflict) => conflict.column('account_id').doUpdateSet(row))
        .execute();
      if (next.silentAfterHours !== null) return { raised: [], cleared: [] };
      const quiet = await trx
        .selectFrom('alerts')
        .select('subject_id')
        .where('account_id', '=', accountId)
        .where('kind', '=', 'silent_inbox')
        .where('cleared_at', 'is', null)
        .execute();
      const subjectIds = quiet.map((alert) => alert.subject_id);
      return { raised: [], cleared: await clearAlerts(trx, { accountId, kind: 'silent_inbox', subjectIds }, now) };
    });
    this.#announce(changes);
    return next;
  }

  async list(
    accountId: string,
    query: { status: 'open' | 'all'; limit: number; offset: number },
  ): Promise<Page<Alert>> {
    let base = this.#db.selectFrom('alerts').where('account_id', '=', accountId);
    if (query.status === 'open') base = base.where('cleared_at', 'is', null);
    const [rows, count] = await Promise.all([
      base
        .selectAll()
        .orderBy('raised_at', 'desc')
        .orderBy('id', 'desc')
        .limit(query.limit)
        .offset(query.offset)
        .execute(),
      base.select((eb) => eb.fn.countAll<string | number>().as('total')).executeTakeFirstOrThrow(),
    ]);
    return { items: rows.map(toAlert), total: Number(count.total) };
  }

  async get(accountId: string, id: string): Promise<Alert> {
    const row = await this.#db
      .selectFrom('alerts')
      .selectAll()
      .where('account_id', '=', accountId)
      .where('id', '=', id)
      .executeTakeFirst();
    if (!row) throw new NotFound('Alert not found');
    return toAlert(row);
  }

  /** Marks the alert seen by the key's holder; it stays open until its condition ends. The first acknowledgement stays. */
  async acknowledge(accountId: string, id: string, apiKeyId: string): Promise<Alert> {
    await this.#db
      .updateTable('alerts')
      .set({ acknowledged_at: isoNow(this.#clock), acknowledged_by: apiKeyId })
      .where('account_id', '=', accountId)
      .where('id', '=', id)
      .where('acknowledged_at', 'is', null)
      .execute();
    return this.get(accountId, id);
  }

  /** Delivery's failed ends: a 410 raises `endpoint_deactivated`, any other `delivery_failed`, per endpoint. */
  readonly deliveryFailures = {
    failed: async (trx: Transaction<Database>, failure: FailedDelivery): Promise<void> => {
      await raiseAlert(
        trx,
        {
          accountId: failure.accountId,
          kind: failure.endpointDeactivated ? 'endpoint_deactivated' : 'delivery_failed',
          subject: { type: failure.targetType, id: failure.targetId, name: failure.targetName },
          details: {
            deliveryId: failure.deliveryId,
            emailId: failure.emailId,
            attempts: failure.attempts,
            statusCode: failure.statusCode,
            error: failure.error,
          },
        },
        isoNow(this.#clock),
      );
    },
    // Delivery wakes the event streams itself after its commit.
    committed: (): void => void this.#notifier.sendDue(),
  };

  /** Stored mail clears the silent-inbox alerts of its address and domain (the scheduled check would, later). */
  mailArrived(mail: readonly ArrivedMail[]): void {
    const byAccount = new Map<string, Set<string>>();
    for (const { accountId, domainId, addressId } of mail) {
      for (const id of [domainId, addressId]) {
        if (id === null || !this.#quietSubjects.has(id)) continue;
        byAccount.set(accountId, (byAccount.get(accountId) ?? new Set()).add(id));
      }
    }
    for (const [accountId, ids] of byAccount) {
      const changes: AlertChanges = { raised: [], cleared: [] };
      const clearing = this.#checks
        .change(changes, async (trx, now) => ({
          raised: [],
          cleared: await clearAlerts(trx, { accountId, kind: 'silent_inbox', subjectIds: [...ids] }, now),
        }))
        .then(() => this.#announce(changes))
        .catch((error) => this.#logger.error({ err: error, accountId }, 'clearing silent-inbox alerts failed'))
        .finally(() => this.#clearing.delete(clearing));
      this.#clearing.add(clearing);
    }
  }

  /** Resolves once the clears started by arriving mail have finished (shutdown waits for them). */
  async idle(): Promise<void> {
    await Promise.all([...this.#clearing]);
  }

  /** One pass of the scheduled checks, then the alert webhooks due. */
  async check(): Promise<AlertChanges> {
    const changes = await this.#checks.run();
    const quiet = await this.#db
      .selectFrom('alerts')
      .select('subject_id')
      .where('kind', '=', 'silent_inbox')
      .where('cleared_at', 'is', null)
      .execute();
    this.#quietSubjects = new Set(quiet.map((alert) => alert.subject_id));
    this.#announce(changes);
    await this.#notifier.sendDue();
    return changes;
  }

  #announce(changes: AlertChanges): void {
    for (const alert of changes.raised) if (alert.kind === 'silent_inbox') this.#quietSubjects.add(alert.subject.id);
    for (const alert of changes.cleared)
      if (alert.kind === 'silent_inbox') this.#quietSubjects.delete(alert.subject.id);
    if (changes.raised.length + changes.cleared.length === 0) return;
    this.#eventsAppended();
    void this.#notifier.sendDue();
  }
}
