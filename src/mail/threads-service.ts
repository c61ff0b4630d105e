import { type Clock, Invalid, NotFound } from '../core/index.ts';
import type { Db, ThreadsTable } from '../db/index.ts';
import type { MailPages } from '../search/index.ts';
import type { HtmlCleaner, ReadableEmail } from './html-cleaner.ts';
import { resolveListFilter } from './list-filter.ts';
import {
  type AddressList,
  type EmailSummary,
  loadThreadMessages,
  PREVIEW_HEADS,
  previewOf,
  SUMMARY_COLUMNS,
  toSummary,
} from './stored-email.ts';
import { readThreadCursor, type ThreadPosition, threadCursor } from './thread-cursor.ts';

const ID_PATTERN = /^[A-Za-z0-9_-]{1,128}$/;

export interface ThreadSummary {
  id: string;
  rootMessageId: string;
  normalizedSubject: string;
  messageCount: number;
  lastMessageAt: string;
  createdAt: string;
  updatedAt: string;
  participantEmails: string[];
  participantNames: string[];
  latest: EmailSummary | null;
  unreadCount: number;
  isArchived: boolean;
}

export interface ThreadListQuery {
  limit: number;
  /** The previous page's `nextCursor` (or a thread id: the page starts after that thread). */
  cursor?: string;
  search?: string;
  unreadOnly?: boolean;
  /** A domain name or id. */
  domain?: string;
  /** An address, or the id of one of the account's addresses. */
  address?: string;
}

/** Lower-cased addresses of From, To and Cc, and their `Name <address>` forms, first appearance first. */
function participants(emails: Array<{ from: AddressList | null; to: AddressList | null; cc: AddressList | null }>) {
  const names = new Map<string, string>();
  for (const email of emails) {
    for (const list of [email.from, email.to, email.cc]) {
      for (const { name, address } of list?.addresses ?? []) {
        if (!address) continue;
        const key = address.toLowerCase();
        if (!names.has(key) || (name && names.get(key) === key)) names.set(key, name ? `${name} <${key}>` : key);
      }
    }
  }
  return { participantEmails: [...names.keys()], participantNames: [...names.values()] };
}

/** A thread's newest email: the last of those received last. */
function latestOf(emails: EmailSummary[]): EmailSummary | null {
  return emails.reduce<EmailSummary | null>(
    (newest, email) => (!newest || email.receivedAt >= newest.receivedAt ? email : newest),
    null,
  );
}

function summarize(thread: ThreadsTable, emails: EmailSummary[]): ThreadSummary {
  const latest = latestOf(emails);
  return {
    id: thread.id,
    rootMessageId: thread.root_message_id,
    normalizedSubject: thread.normalized_subject,
    messageCount: Number(thread.message_count),
    lastMessageAt: thread.last_message_at,
    createdAt: thread.created_at,
    updatedAt: thread.updated_at,
    ...participants(emails),
    latest,
    unreadCount: emails.filter((email) => !email.isRead).length,
    isArchived: emails.length > 0 && emails.every((email) => email.isArchived),
  };
}

function positionOf(thread: Pick<ThreadsTable, 'id' | 'last_message_at'>): ThreadPosition {
  return { lastMessageAt: thread.last_message_at, id: thread.id };
}

/** Conversations (threads ingest builds from Message-ID, In-Reply-To and References), newest activity first. */
export class ThreadsService {
  readonly #db: Db;
  readonly #pages: MailPages;
  readonly #clock: Clock;
  readonly #cleaner: HtmlCleaner;

  constructor(deps: { db: Db; pages: MailPages; clock: Clock; cleaner: HtmlCleaner }) {
    this.#db = deps.db;
    this.#pages = deps.pages;
    this.#clock = deps.clock;
    this.#cleaner = deps.cleaner;
  }

  async list(
    accountId: string,
    query: ThreadListQuery,
  ): Promise<{ threads: ThreadSummary[]; nextCursor: string | null }> {
    let select = this.#db.selectFrom('threads').selectAll().where('threads.account_id', '=', accountId);
    if (query.cursor !== undefined) {
      const after = await this.#position(accountId, query.cursor);
      select = select.where((eb) =>
        eb.or([
          eb('threads.last_message_at', '<', after.lastMessageAt),
          eb.and([eb('threads.last_message_at', '=', after.lastMessageAt), eb('threads.id', '<', after.id)]),
        ]),
      );
    }
    if (query.search?.trim() || query.domain || query.address || query.unreadOnly) {
      // As the mail list reads them: a domain by id or name (an IDN by either form), an address by id or address.
      const filter = await resolveListFilter(this.#db, accountId, {
        search: query.search,
        domain: query.domain,
        emailAddress: query.address,
        isRead: query.unreadOnly ? false : undefined,
        archived: 'include',
      });
      const where = await this.#pages.conditions(accountId, filter, this.#clock.now().getTime());
      select = select.where('threads.id', 'in', (eb) =>
        eb
          .selectFrom('emails')
          .select('emails.thread_id')
          .where((inner) => inner.and(where(inner)))
          .where('emails.thread_id', 'is not', null)
          .$narrowType<{ thread_id: string }>(),
      );
    }
    const rows = await select
      .orderBy('threads.last_message_at', 'desc')
      .orderBy('threads.id', 'desc')
      .limit(query.limit + 1)
      .execute();
    const page = rows.slice(0, query.limit);
    const emails = await this.#summaries(
      accountId,
      page.map((thread) => thread.id),
    );
    return {
      threads: page.map((thread) => summarize(thread, emails.get(thread.id) ?? [])),
      nextCursor: rows.length > query.limit ? threadCursor(positionOf(page[page.length - 1]!)) : null,
    };
  }

  async get(accountId: string, id: string): Promise<{ thread: ThreadSummary; messages: ReadableEmail[] }> {
    if (!ID_PATTERN.test(id)) throw new Invalid('Valid thread ID is required');
    const thread = await this.#db
      .selectFrom('threads')
      .selectAll()
      .where('account_id', '=', accountId)
      .where('id', '=', id)
      .executeTakeFirst();
    if (!thread) throw new NotFound('Thread not found');
    const messages = await loadThreadMessages(this.#db, accountId, id);
    const summaries = (await this.#summaries(accountId, [id])).get(id) ?? [];
    return { thread: summarize(thread, summaries), messages: await this.#cleaner.readableAll(messages) };
  }

  /** Where a cursor says the page starts after; a thread id stands for where that thread is now. */
  async #position(accountId: string, cursor: string): Promise<ThreadPosition> {
    const read = readThreadCursor(cursor);
    if (!('threadId' in read)) return read;
    const thread = await this.#db
      .selectFrom('threads')
      .select(['id', 'last_message_at'])
      .where('account_id', '=', accountId)
      .where('id', '=', read.threadId)
      .executeTakeFirst();
    if (!thread) throw new Invalid('Invalid cursor');
    return positionOf(thread);
  }

  async #summaries(accountId: string, threadIds: string[]): Promise<Map<string, EmailSummary[]>> {
    const byThread = new Map<string, EmailSummary[]>();
    if (threadIds.length === 0) return byThread;
    const rows = await this.#db
      .selectFrom('emails')
      .select(SUMMARY_COLUMNS.map((column) => `emails.${column}` as const))
      .where('emails.account_id', '=', accountId)
      .where('emails.thread_id', 'in', threadIds)
      .orderBy('emails.received_at')
      .execute();
    for (const row of rows) {
      const summary = toSummary({ ...row, text_head: null, html_head: null });
      const list = byThread.get(row.thread_id!) ?? [];
      list.push(summary);
      byThread.set(row.thread_id!, list);
    }
    // Only each thread's newest email shows a preview: the start of every email's body (up to 50,000 characters of
    // HTML each) made a page of long threads read and strip megabytes.
    const latest = new Map([...byThread.values()].flatMap((emails) => latestOf(emails) ?? []).map((e) => [e.id, e]));
    if (latest.size === 0) return byThread;
    const previews = await this.#db
      .selectFrom('emails')
      .select(['emails.id', ...PREVIEW_HEADS])
      .where('emails.account_id', '=', accountId)
      .where('emails.id', 'in', [...latest.keys()])
      .execute();
    for (const { id, text_head, html_head } of previews) latest.get(id)!.preview = previewOf(text_head, html_head);
    return byThread;
  }
}
