import type { Flag } from '../flags.ts';

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
