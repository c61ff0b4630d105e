import type { Generated } from 'kysely';
import type { Flag } from '../flags.ts';

export type DeliveryStatus = 'pending' | 'processing' | 'success' | 'failed';

/** The outbox: one row per (email, endpoint or legacy webhook), reused across retries. */
export interface DeliveriesTable {
  id: string;
  account_id: string;
  email_id: string;
  target_type: 'endpoint' | 'webhook';
  target_id: string;
  delivery_type: 'webhook' | 'email_forward';
  status: DeliveryStatus;
  attempts: number;
  /** When the job is next due; null once it has finished. */
  next_attempt_at: string | null;
  lease_owner: string | null;
  lease_expires_at: string | null;
  last_attempt_at: string | null;
  last_status_code: number | null;
  last_error: string | null;
  /** JSON `{responseCode, responseBody, deliveryTime, url}` of the latest attempt. */
  response_data: string | null;
  /** Attempts made before the job was last queued by hand; retries are counted from here (migration 0006). */
  round_start_attempt: Generated<number>;
  queued_at: string | null;
  created_at: string;
  updated_at: string;
}

export interface DeliveryAttemptsTable {
  id: string;
  delivery_id: string;
  attempt: number;
  started_at: string;
  duration_ms: number;
  success: Flag;
  status_code: number | null;
  /** The first 2,000 characters of the response body. */
  response_body: string | null;
  error: string | null;
  url: string | null;
  /** JSON array of forward recipients with each one's outcome. */
  recipients: string | null;
}
