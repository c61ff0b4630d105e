import { newId } from '../core/index.ts';
import { preparedQuery, type ThreadsTable } from '../db/index.ts';

export interface ThreadPlacement {
  threadId: string;
  position: number;
}

const REPLY_PREFIX = /^\s*((re|r|fwd|fw|aw|wg|vs|sv)\s*(\[\d+\])?\s*:\s*)+/i;

/** The subject without its chain of reply and forward prefixes, lower-cased, as threads are titled. */
function normalizeSubject(subject: string | null): string {
  return (subject ?? '').replace(REPLY_PREFIX, '').trim().toLowerCase();
}

/** A stored email of the account that the new email names (or that has its Message-ID), with its thread. */
export interface KnownMessage {
  thread_id: string | null;
  /** The thread's message count; null when the thread is gone. */
  message_count: number | null;
  received_at: string;
}

type Threaded = KnownMessage & { thread_id: string; message_count: number };

/** How many of the Message-IDs a new email replies to are looked up. */
const MAX_RELATED_IDS = 100;

/**
 * The Message-IDs whose stored emails place a new email in a thread: those it replies to, and its own. Of a longer
 * chain it keeps References' first id (the thread's root), In-Reply-To and References' last ids (the nearest
 * ancestors), as RFC 5322 §3.6.4 has a sender trim References: the root may be all the account has stored.
 */
export function threadingMessageIds(email: {
  messageId: string | null;
  inReplyToIds: string[];
  references: string[];
}): string[] {
  const { inReplyToIds, references } = email;
  const head = [...references.slice(0, 1), ...inReplyToIds].slice(0, MAX_RELATED_IDS);
  const rest = references.slice(1);
  const nearest = rest.slice(Math.max(0, rest.length - (MAX_RELATED_IDS - head.length)));
  const related = [...new Set([...head, ...nearest])];
  if (email.messageId) related.push(email.messageId);
  return related;
}

/**
 * Puts one stored email into a thread of its account, from headers only (RFC 5322): a message that names an already
 * threaded message in In-Reply-To or References joins that thread; any other starts a new one rooted at its own
 * Message-ID (or the email id when it has none). `known` are the account's stored emails with the Message-IDs of
 * threadingMessageIds, which the caller has read for its own checks too. The caller writes what it returns: the
 * new thread's row, or the joined thread's new message count.
 */
export function placeInThread(
  email: { id: string; accountId: string; messageId: string | null; subject: string | null },
  known: readonly KnownMessage[],
  now: string,
): ThreadPlacement & { newThread?: ThreadsTable } {
  const existing = known
    .filter((message): message is Threaded => message.thread_id !== null && message.message_count !== null)
    .sort((a, b) => b.received_at.localeCompare(a.received_at))[0];
  if (existing) return { threadId: existing.thread_id, position: existing.message_count + 1 };
  const threadId = newId('thr');
  return {
    threadId,
    position: 1,
    newThread: {
      id: threadId,
      account_id: email.accountId,
      root_message_id: email.messageId ?? email.id,
      normalized_subject: normalizeSubject(email.subject),
      message_count: 1,
      last_message_at: now,
      created_at: now,
      updated_at: now,
    },
  };
}

/** Of two stored times, the later; messages are written in the order their analysis ends, not as they arrived. */
export function latest(stored: string | undefined, time: string): string {
  return stored !== undefined && stored > time ? stored : time;
}

/** Counts a joined thread's new emails: `position` is the last one's. */
export const addToThread = preparedQuery((db, { id, position, now }: { id: string; position: number; now: string }) =>
  db
    .updateTable('threads')
    .set((eb) => ({
      message_count: position,
      // A transaction that commits later may carry mail that arrived earlier (another instance's, or one waiting).
      last_message_at: eb.case().when('last_message_at', '<', now).then(now).else(eb.ref('last_message_at')).end(),
      updated_at: now,
    }))
    .where('id', '=', id),
);
