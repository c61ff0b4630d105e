import type { Generated } from 'kysely';

/** An account's alert endpoint and silent-inbox period (migration 0022, src/alerts). */
export interface AlertSettingsTable {
  account_id: string;
  endpoint_url: string | null;
  /** Signs the alert webhooks (Standard Webhooks). */
  secret: string;
  /** Null: no silent-inbox alerts. */
  silent_after_hours: number | null;
  /** When a process last checked the account for silent inboxes: the claim that keeps others from doing it too. */
  silence_checked_at: string | null;
  updated_at: string;
}

/** One health alert from raise to clear; at most one open (cleared_at null) per account, kind and subject. */
export interface AlertsTable {
  id: string;
  account_id: string;
  kind: string;
  subject_type: string;
  subject_id: string;
  subject_name: string;
  /** JSON: what the check saw (the records that stopped matching, the failed delivery...). */
  details: string;
  raised_at: string;
  cleared_at: string | null;
  acknowledged_at: string | null;
  /** The API key that acknowledged it. */
  acknowledged_by: string | null;
  /** When a process last checked whether it has cleared: the claim that keeps others from doing it too. */
  checked_at: string | null;
}

/** A signed alert webhook to send: the alert outbox. While in flight, next_attempt_at holds the lease expiry. */
export interface AlertNotificationsTable {
  id: string;
  account_id: string;
  alert_id: string;
  type: string;
  /** The JSON body, as signed and sent on every attempt. */
  body: string;
  status: 'pending' | 'processing' | 'success' | 'failed';
  attempts: Generated<number>;
  next_attempt_at: string | null;
  last_status_code: number | null;
  last_error: string | null;
  created_at: string;
  updated_at: string;
}
