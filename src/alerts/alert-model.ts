import type { AlertsTable } from '../db/index.ts';

/**
 * What an alert is about: a verified domain whose required records stopped matching (`dns_drift`), an address or
 * domain that received nothing for the account's silent period (`silent_inbox`), a delivery that ended failed
 * (`delivery_failed`, per endpoint), an endpoint deactivated because its receiver answered 410 (`endpoint_deactivated`).
 */
export type AlertKind = 'dns_drift' | 'silent_inbox' | 'delivery_failed' | 'endpoint_deactivated';

export type AlertSubjectType = 'domain' | 'address' | 'endpoint' | 'webhook';

export interface AlertSubject {
  type: AlertSubjectType;
  id: string;
  /** The domain name, the address, or the endpoint's name, as it was when the alert was raised. */
  name: string;
}

export interface Alert {
  id: string;
  kind: AlertKind;
  subject: AlertSubject;
  /** What the check saw when it raised the alert. */
  details: Record<string, unknown>;
  status: 'open' | 'cleared';
  raisedAt: string;
  clearedAt: string | null;
  acknowledgedAt: string | null;
  /** The id of the API key that acknowledged it. */
  acknowledgedBy: string | null;
}

/** A condition that holds now, to be raised unless an alert for it is open already. */
export interface AlertCondition {
  accountId: string;
  kind: AlertKind;
  subject: AlertSubject;
  details: Record<string, unknown>;
}

export interface AlertSettings {
  /** Where alert webhooks go; null: alerts are only listed and streamed. */
  endpointUrl: string | null;
  /** Signs the alert webhooks (Standard Webhooks); made when settings are first saved, unless given. */
  secret: string | null;
  /** Hours without mail after which an address or domain raises `silent_inbox`; null: off. */
  silentAfterHours: number | null;
}

export function toAlert(row: AlertsTable): Alert {
  return {
    id: row.id,
    kind: row.kind as AlertKind,
    subject: { type: row.subject_type as AlertSubjectType, id: row.subject_id, name: row.subject_name },
    details: JSON.parse(row.details) as Record<string, unknown>,
    status: row.cleared_at === null ? 'open' : 'cleared',
    raisedAt: row.raised_at,
    clearedAt: row.cleared_at,
    acknowledgedAt: row.acknowledged_at,
    acknowledgedBy: row.acknowledged_by,
  };
}
