import type { Flag } from '../flags.ts';

export interface DomainsTable {
  id: string;
  account_id: string;
  domain: string;
  status: 'pending' | 'verified' | 'failed';
  verification_token: string | null;
  parent_domain_id: string | null;
  can_receive_emails: Flag;
  has_mx_records: Flag;
  domain_provider: string | null;
  provider_confidence: 'high' | 'medium' | 'low' | null;
  last_dns_check: string | null;
  is_catch_all_enabled: Flag;
  catch_all_endpoint_id: string | null;
  receive_dmarc_emails: Flag;
  /** On a verified root: mail to any subdomain not registered on its own is accepted and goes to the catch-all. */
  include_subdomains: Flag;
  verified_at: string | null;
  created_at: string;
  updated_at: string;
  /** Days its mail is kept, over the account's; null defers to the account (migration 0021, src/retention). */
  retention_days?: number | null;
  /** Set: none of its mail expires, whatever the retention periods say (defaults to 0). */
  legal_hold?: Flag;
}

export interface DnsRecordsTable {
  id: string;
  domain_id: string;
  /** Order in which the records are listed to the user. */
  position: number;
  record_type: 'TXT' | 'MX' | 'CNAME';
  name: string;
  value: string;
  priority: number | null;
  description: string | null;
  is_required: Flag;
  is_verified: Flag;
  last_checked: string | null;
  last_error: string | null;
  created_at: string;
  updated_at: string;
}
