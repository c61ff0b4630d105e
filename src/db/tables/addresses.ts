import type { Flag } from '../flags.ts';

export interface EmailAddressesTable {
  id: string;
  account_id: string;
  domain_id: string;
  address: string;
  endpoint_id: string | null;
  webhook_id: string | null;
  is_active: Flag;
  created_at: string;
  updated_at: string;
  /** Days its mail is kept, over its domain's and the account's; null defers to them (migration 0021). */
  retention_days?: number | null;
  /** Set: none of its mail expires, whatever the retention periods say (defaults to 0). */
  legal_hold?: Flag;
  /** When it was created active or last switched on; null while it has never been active (migration 0024). */
  activated_at?: string | null;
}
