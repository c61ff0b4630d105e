import type { EmailsTable } from '../db/index.ts';
import { preparedQuery } from '../db/index.ts';
import type { AcceptedRoute, PreparedMessage } from './email-writer.ts';

/** A retried copy (same recipient, Message-ID and bytes) arriving within this window is stored once. */
const DEDUPE_WINDOW_MS = 24 * 3600 * 1000;

/** What retriedCopy compares a stored copy by. */
export const COPY_COLUMNS = ['id', 'account_id', 'recipient', 'raw_sha256', 'received_at'] as const;
export type StoredCopy = Pick<EmailsTable, (typeof COPY_COLUMNS)[number]>;

/** Without a Message-ID a retried copy can only be found by recipient and content (see migration 0012). */
export const copiesWithoutMessageId = preparedQuery(
  (db, { recipient, sha256 }: { recipient: string; sha256: string }) =>
    db
      .selectFrom('emails')
      .select(COPY_COLUMNS)
      .where('message_id', 'is', null)
      .where('recipient', '=', recipient)
      .where('raw_sha256', '=', sha256),
);

/** A copy of `message` already stored for `route` within the dedupe window, among `candidates`. */
export function retriedCopy(candidates: readonly StoredCopy[], message: PreparedMessage, route: AcceptedRoute) {
  const since = new Date(message.receivedAt.getTime() - DEDUPE_WINDOW_MS).toISOString();
  // A copy stored for another account (the domain has moved since) is that account's, not a retry of this mail.
  return candidates.find(
    (copy) =>
      copy.account_id === route.accountId &&
      copy.recipient === route.recipient &&
      copy.raw_sha256 === message.contentSha256 &&
      copy.received_at >= since,
  );
}
