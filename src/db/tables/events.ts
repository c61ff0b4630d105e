import type { Generated } from 'kysely';

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
