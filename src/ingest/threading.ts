import type { Transaction } from 'kysely';
import { newId } from '../core/index.ts';
import { type Database, insertRow, preparedQuery } from '../db/index.ts';

export interface ThreadPlacement {
  threadId: string;
  position: number;
}

const REPLY_PREFIX = /^\s*((re|r|fwd|fw|aw|wg|vs|sv)\s*(\[\d+\])?\s*:\s*)+/i;

/** The subject without its chain of reply and forward prefixes, lower-cased, as threads are titled. */
export function normalizeSubject(subject: string | null): string {
  return (subject ?? '').replace(REPLY_PREFIX, '').trim().toLowerCase();
}

/** Without ORDER BY so the planner uses the (account_id, message_id) index; the few matches are sorted by the caller. */
const threadsOf = preparedQuery((db, { accountId, messageIds }: { accountId: string; messageIds: string[] }) =>
  db
    .selectFrom('emails')
    .innerJoin('threads', 'threads.id', 'emails.thread_id')
    .select(['threads.id', 'threads.message_count', 'emails.received_at'])
    .where('emails.account_id', '=', accountId)
    .where('emails.message_id', 'in', messageIds),
);

const addToThread = preparedQuery((db, { id, position, now }: { id: string; position: number; now: string }) =>
  db
    .updateTable('threads')
    .set({ message_count: position, last_message_at: now, updated_at: now })
    .where('id', '=', id),
);

/**
 * Puts one stored email into a thread of its account, from headers only (RFC 5322): a message that names an already
 * threaded message in In-Reply-To or References joins that thread; any other starts a new one rooted at its own
 * Message-ID (or the email id when it has none). Runs inside the ingest transaction.
 */
export async function placeInThread(
  trx: Transaction<Database>,
  email: {
    id: string;
    accountId: string;
    messageId: string | null;
    inReplyTo: string | null;
    references: string[];
    subject: string | null;
  },
  now: string,
): Promise<ThreadPlacement> {
  const related = [...new Set([...(email.inReplyTo ? [email.inReplyTo] : []), ...email.references])].slice(-100);
  if (email.messageId) related.push(email.messageId);
  const matches = related.length === 0 ? [] : await threadsOf(trx, { accountId: email.accountId, messageIds: related });
  const existing = matches.sort((a, b) => b.received_at.localeCompare(a.received_at))[0];
  if (existing) {
    const position = existing.message_count + 1;
    await addToThread(trx, { id: existing.id, position, now });
    return { threadId: existing.id, position };
  }
  const threadId = newId('thr');
  await insertRow(trx, 'threads', {
    id: threadId,
    account_id: email.accountId,
    root_message_id: email.messageId ?? email.id,
    normalized_subject: normalizeSubject(email.subject),
    message_count: 1,
    last_message_at: now,
    created_at: now,
    updated_at: now,
  });
  return { threadId, position: 1 };
}
