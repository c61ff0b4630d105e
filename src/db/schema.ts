import type { Generated } from 'kysely';

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

export interface ThreadsTable {
  id: string;
  account_id: string;
  root_message_id: string;
  normalized_subject: string;
  message_count: number;
  last_message_at: string;
  created_at: string;
  updated_at: string;
}

/** The verdict words stored for SPF, DKIM, DMARC, ARC, spam and virus checks. */
export type Verdict = 'PASS' | 'FAIL' | 'SOFTFAIL' | 'NEUTRAL' | 'NONE' | 'TEMPERROR' | 'PERMERROR' | 'DISABLED';

/** One row per accepted recipient of a received message; all rows of one message share its raw blob. */
export interface EmailsTable {
  id: string;
  account_id: string;
  domain_id: string | null;
  address_id: string | null;
  /** The envelope recipient (RCPT TO), lower-cased. */
  recipient: string;
  mail_from: string | null;
  helo: string | null;
  client_ip: string | null;
  message_id: string | null;
  subject: string | null;
  from_address: string | null;
  from_name: string | null;
  /** `{text, addresses[{name, address}]}` JSON, or null when the header is absent. */
  from_json: string | null;
  to_json: string | null;
  cc_json: string | null;
  bcc_json: string | null;
  reply_to_json: string | null;
  /** The Date header, as ISO 8601. */
  sent_date: string | null;
  in_reply_to: string | null;
  references_json: string | null;
  priority: string | null;
  text_body: string | null;
  html_body: string | null;
  /** Lower-case header name to string or string[]. */
  headers_json: string | null;
  /** `[{filename, contentType, size, contentId, contentDisposition}]`, in MIME order. */
  attachments_json: string;
  attachment_count: number;
  parse_success: Flag;
  parse_error: string | null;
  raw_blob_key: string;
  raw_size: number;
  raw_sha256: string;
  spf: Verdict;
  dkim: Verdict;
  dmarc: Verdict;
  arc: Verdict;
  spam: Verdict;
  virus: Verdict;
  /** The Authentication-Results header Mailroom computed. */
  auth_results: string | null;
  thread_id: string | null;
  thread_position: number | null;
  is_read: Flag;
  read_at: string | null;
  is_archived: Flag;
  archived_at: string | null;
  processing_ms: number;
  received_at: string;
  created_at: string;
  updated_at: string;
  /** JSON array of the rules and blocklist entries that matched at ingest (see src/rules), or null when none did. */
  rule_matches_json: string | null;
  /** PostgreSQL only: the search vector, written as tsvector text (see postgresSearchVectors). */
  search_vector?: string | null;
}

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

/**
 * Exact email counts by the unsearched list filters (migration 0007), kept by triggers; a count is the sum over its
 * shards. `domain_id` is '' for emails without a domain.
 */
export interface EmailCountsTable {
  account_id: string;
  domain_id: string;
  is_archived: Flag;
  parse_success: Flag;
  is_read: Flag;
  shard: number;
  count: number | string;
}

/** SQLite only (migration 0014): moves on with every change to what routing reads. One row, id 1. */
export interface RoutingVersionTable {
  id: number;
  version: number;
}

/** A Guard-style rule (src/rules): conditions that must all hold, and one action. */
export interface RulesTable {
  id: string;
  account_id: string;
  name: string;
  description: string | null;
  is_active: Flag;
  /** Lower runs first. */
  priority: number;
  /** The rule's conditions object (see RuleConditions in src/rules). */
  conditions_json: string;
  action: 'block' | 'route' | 'tag';
  /** The endpoint a `route` rule sends the mail to. */
  action_endpoint_id: string | null;
  /** The tag a `tag` rule adds. */
  action_tag: string | null;
  created_at: string;
  updated_at: string;
}

/** A blocked sender: an address, or `*@domain` for every address of a domain; lower-cased. */
export interface BlockedSendersTable {
  id: string;
  account_id: string;
  email_address: string;
  created_at: string;
}

/** The raw blob of a deleted email, to delete once no email row refers to it (see src/retention). */
export interface BlobErasuresTable {
  id: string;
  blob_key: string;
  queued_at: string;
}

/** The audit record of one erase by query: never the content, only who, when, the filter and how many. */
export interface MailErasuresTable {
  id: string;
  account_id: string;
  api_key_id: string;
  /** The list filter the erase matched, as the API gave it. */
  filter_json: string;
  erased_count: number;
  erased_at: string;
}

/**
 * The account event log (migration 0020, src/events): what `GET /api/v2/events` streams. `txid` is PostgreSQL's only:
 * the writing transaction, by which readers order rows (ids are drawn before commit, so they commit out of order).
 */
export interface EventsTable {
  id: Generated<number | string>;
  account_id: string;
  type: string;
  /** JSON: the event's small summary (ids and a few fields). */
  data: string;
  /** The email the event tells of (its data's `emailId`), by which expiry and erase delete it (migration 0026). */
  email_id: string | null;
  created_at: string;
  txid?: Generated<string>;
}

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

export interface Database {
  accounts: AccountsTable;
  api_keys: ApiKeysTable;
  domains: DomainsTable;
  dns_records: DnsRecordsTable;
  endpoints: EndpointsTable;
  webhooks: WebhooksTable;
  email_addresses: EmailAddressesTable;
  threads: ThreadsTable;
  emails: EmailsTable;
  email_counts: EmailCountsTable;
  deliveries: DeliveriesTable;
  delivery_attempts: DeliveryAttemptsTable;
  routing_version: RoutingVersionTable;
  rules: RulesTable;
  blocked_senders: BlockedSendersTable;
  blob_erasures: BlobErasuresTable;
  mail_erasures: MailErasuresTable;
  events: EventsTable;
  alert_settings: AlertSettingsTable;
  alerts: AlertsTable;
  alert_notifications: AlertNotificationsTable;
}
