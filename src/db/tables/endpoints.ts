import type { Flag } from '../flags.ts';

export interface EndpointsTable {
  id: string;
  account_id: string;
  name: string;
  type: 'webhook' | 'email' | 'email_group';
  config: string;
  is_active: Flag;
  description: string | null;
  deactivated_reason: string | null;
  created_at: string;
  updated_at: string;
  /** The signing secret replaced last, still signing beside the new one until its expiry (migration 0028). */
  previous_secret?: string | null;
  previous_secret_expires_at?: string | null;
}

export interface WebhooksTable {
  id: string;
  account_id: string;
  name: string;
  url: string;
  secret: string | null;
  headers: string | null;
  timeout: number;
  retry_attempts: number;
  is_active: Flag;
  description: string | null;
  verification_token: string;
  deactivated_reason: string | null;
  created_at: string;
  updated_at: string;
  /** The signing secret replaced last, still signing beside the new one until its expiry (migration 0028). */
  previous_secret?: string | null;
  previous_secret_expires_at?: string | null;
}
