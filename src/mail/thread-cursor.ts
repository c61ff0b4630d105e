import { Invalid } from '../core/index.ts';

/** Where a page of threads ended: its last thread's sort key, newest activity first, then id. */
export interface ThreadPosition {
  lastMessageAt: string;
  id: string;
}

const THREAD_ID = /^thr_[0-9a-z]{1,124}$/;
/** How times are stored (toISOString); anything else in a cursor was not made here. */
const STORED_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,6})?Z$/;

/**
 * The opaque cursor a page hands out. It carries the position itself, so the next page starts right after it even
 * when that thread has moved (a reply) or is gone (erased) in the meantime.
 */
export function threadCursor(position: ThreadPosition): string {
  return Buffer.from(JSON.stringify([position.lastMessageAt, position.id])).toString('base64url');
}

/**
 * The position a cursor carries, or a thread id: what cursors were before they carried the position, and what the
 * official client's documentation still tells callers to pass.
 */
export function readThreadCursor(cursor: string): ThreadPosition | { threadId: string } {
  if (THREAD_ID.test(cursor)) return { threadId: cursor };
  let value: unknown;
  try {
    value = JSON.parse(Buffer.from(cursor, 'base64url').toString());
  } catch {
    throw new Invalid('Invalid cursor');
  }
  if (!Array.isArray(value) || value.length !== 2) throw new Invalid('Invalid cursor');
  const [lastMessageAt, id] = value;
  if (typeof lastMessageAt !== 'string' || !STORED_TIME.test(lastMessageAt)) throw new Invalid('Invalid cursor');
  if (typeof id !== 'string' || !THREAD_ID.test(id)) throw new Invalid('Invalid cursor');
  return { lastMessageAt, id };
}
