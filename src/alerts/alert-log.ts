import type { Transaction } from 'kysely';
import { newId } from '../core/index.ts';
import type { Database } from '../db/index.ts';
import { appendEvents } from '../events/index.ts';
import { type Alert, type AlertCondition, type AlertKind, toAlert } from './alert-model.ts';

type Trx = Transaction<Database>;

/**
 * Raises the alert for a condition unless one is open for its account, kind and subject (the partial unique index
 * decides, so processes seeing the same condition at once raise it once); with it, in the same transaction, the
 * `alert.raised` event and the signed webhook to send. `observedAt` is when the condition was seen: an alert about
 * the subject cleared since then was cleared by a newer look, and the stale sighting raises nothing. Resolves to the
 * alert when this call raised it.
 */
export async function raiseAlert(
  trx: Trx,
  condition: AlertCondition,
  now: string,
  observedAt = now,
): Promise<Alert | undefined> {
  const clearedSince = await trx
    .selectFrom('alerts')
    .select('id')
    .where('account_id', '=', condition.accountId)
    .where('kind', '=', condition.kind)
    .where('subject_id', '=', condition.subject.id)
    .where('cleared_at', '>=', observedAt)
    .executeTakeFirst();
  if (clearedSince) return undefined;
  const row = await trx
    .insertInto('alerts')
    .values({
      id: newId('alr'),
      account_id: condition.accountId,
      kind: condition.kind,
      subject_type: condition.subject.type,
      subject_id: condition.subject.id,
      subject_name: condition.subject.name,
      details: JSON.stringify(condition.details),
      raised_at: now,
      cleared_at: null,
      acknowledged_at: null,
      acknowledged_by: null,
      checked_at: now,
    })
    .onConflict((conflict) => conflict.doNothing())
    .returningAll()
    .executeTakeFirst();
  if (!row) return undefined;
  const alert = toAlert(row);
  await announce(trx, condition.accountId, 'alert.raised', alert, now);
  return alert;
}

/**
 * Clears the account's open alerts of `kind` about any of `subjectIds` raised by `observedAt` (when the end of the
 * condition was seen; one raised later was raised by a newer look), each with its `alert.cleared` event and webhook.
 * Resolves to the alerts this call cleared (another process clearing them first leaves none).
 */
export async function clearAlerts(
  trx: Trx,
  target: { accountId: string; kind: AlertKind; subjectIds: readonly string[] },
  now: string,
  observedAt = now,
): Promise<Alert[]> {
  if (target.subjectIds.length === 0) return [];
  const rows = await trx
    .updateTable('alerts')
    .set({ cleared_at: now })
    .where('account_id', '=', target.accountId)
    .where('kind', '=', target.kind)
    .where('subject_id', 'in', [...target.subjectIds])
    .where('cleared_at', 'is', null)
    .where('raised_at', '<=', observedAt)
    .returningAll()
    .execute();
  const alerts = rows.map(toAlert);
  for (const alert of alerts) await announce(trx, target.accountId, 'alert.cleared', alert, now);
  return alerts;
}

/** The event on the account's stream, and the webhook to its alert endpoint when it has one. */
async function announce(
  trx: Trx,
  accountId: string,
  type: 'alert.raised' | 'alert.cleared',
  alert: Alert,
  now: string,
): Promise<void> {
  await appendEvents(trx, [{ accountId, type, data: { alert } }], now);
  const settings = await trx
    .selectFrom('alert_settings')
    .select('endpoint_url')
    .where('account_id', '=', accountId)
    .executeTakeFirst();
  if (!settings?.endpoint_url) return;
  await trx
    .insertInto('alert_notifications')
    .values({
      id: newId('alrn'),
      account_id: accountId,
      alert_id: alert.id,
      type,
      body: JSON.stringify({ type, timestamp: now, data: { alert } }),
      status: 'pending',
      next_attempt_at: now,
      last_status_code: null,
      last_error: null,
      created_at: now,
      updated_at: now,
    })
    .execute();
}
