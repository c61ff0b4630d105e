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
