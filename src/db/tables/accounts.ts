export interface AccountsTable {
  id: string;
  name: string;
  domain_limit: number | null;
  created_at: string;
  /** Days mail is kept, unless a domain or address says otherwise; null keeps it forever (migration 0021). */
  retention_days?: number | null;
}

export interface ApiKeysTable {
  id: string;
  account_id: string;
  prefix: string;
  key_hash: string;
  created_at: string;
  /** Written at most once a minute per key, so authentication does not write on every request. */
  last_used_at: string | null;
  revoked_at: string | null;
}
