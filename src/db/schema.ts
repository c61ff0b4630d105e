/**
 * Table types shared by SQLite and PostgreSQL. Both databases store the same column types so that one migration
 * list serves both: times are ISO 8601 UTC text (which sorts correctly), booleans are 0/1 integers, and JSON is text.
 */
export type Flag = 0 | 1;

export interface AccountsTable {
  id: string;
  name: string;
  domain_limit: number | null;
  created_at: string;
}

export interface ApiKeysTable {
  id: string;
  account_id: string;
  prefix: string;
  key_hash: string;
  created_at: string;
  last_used_at: string | null;
}

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
  verified_at: string | null;
  created_at: string;
  updated_at: string;
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
}

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
}

export interface Database {
  accounts: AccountsTable;
  api_keys: ApiKeysTable;
  domains: DomainsTable;
  dns_records: DnsRecordsTable;
  endpoints: EndpointsTable;
  webhooks: WebhooksTable;
  email_addresses: EmailAddressesTable;
}
