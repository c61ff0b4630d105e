import type { Readable } from 'node:stream';
import { sql } from 'kysely';
import { type Clock, Invalid, isOutage, isoNow, NotFound } from '../core/index.ts';
import { type Db, fromFlag, toFlag } from '../db/index.ts';
import type { MailPages } from '../search/index.ts';
import { endAfter, indexByName } from './attachment-stream.ts';
import type { HtmlCleaner, ReadableEmail } from './html-cleaner.ts';
import { type ListFilter, resolveListFilter } from './list-filter.ts';
import {
  type AttachmentInfo,
  EMAIL_COLUMNS,
  type EmailSummary,
  loadThreadMessages,
  PREVIEW_HEADS,
  type StoredEmail,
  SUMMARY_COLUMNS,
  toStoredEmail,
  toSummary,
} from './stored-email.ts';

/** Raw messages by blob key (the blob store, seen from here). */
export interface RawMessages {
  get(key: string): Promise<Readable>;
  location(key: string): { bucketName: string; objectKey: string };
}

/** Streams attachment `index` (0-based, in the order of `attachments_json`) out of a stored message; null if absent. */
export type AttachmentExtractor = (raw: Readable, index: number) => Promise<{ stream: Readable } | null>;

/** The SHA-256 (hex) of each attachment of a stored message, in the order of `attachments_json`. */
export type AttachmentHasher = (raw: Readable) => Promise<string[]>;

/** An attachment as the listing shows it: its position and an id from the position and the content's hash. */
export interface ListedAttachment extends AttachmentInfo {
  index: number;
  id: string;
}

const ATTACHMENT_ID = /^att_(0|[1-9][0-9]{0,5})_[0-9a-f]{12}$/;

export interface MailServiceDeps {
  db: Db;
  /** How the database finds a list's page (SqliteMailPages or PostgresMailPages). */
  pages: MailPages;
  clock: Clock;
  raw: RawMessages;
  extractAttachment: AttachmentExtractor;
  hashAttachments: AttachmentHasher;
  cleaner: HtmlCleaner;
}

/** Raw messages up to this size are returned inline as `content.rawContent`; larger ones only through `/raw`. */
const RAW_CONTENT_MAX_BYTES = 1024 * 1024;

const ID_PATTERN = /^[A-Za-z0-9_-]{1,128}$/;

/**
 * What an email's `processing.s3Info.error` says when its raw message could not be read: in the API's words, never
 * the store's, which name its hosts, ports and paths.
 */
function rawFetchErrorOf(error: unknown): string {
  return isOutage(error) ? 'Storage unavailable, try again shortly' : 'Email content not found';
}

export interface MailList {
  emails: EmailSummary[];
  /** Exact, or COUNT_LIMIT when a search matched more (then `totalIsExact` is false). */
  total: number;
  totalIsExact: boolean;
  hasMore: boolean;
}

export interface EmailDetail {
  email: ReadableEmail;
  /** The raw message when it is at most RAW_CONTENT_MAX_BYTES; otherwise omitted. */
  rawContent: string | null;
  rawFetchError: string | null;
  location: { bucketName: string; objectKey: string };
}

/** A change of read and archive state; what is left out stays. */
export interface StateChange {
  isRead?: boolean;
  isArchived?: boolean;
}

export interface ReadState {
  id: string;
  isRead: boolean;
  readAt: string | null;
  isArchived: boolean;
  archivedAt: string | null;
  updatedAt: string;
}

async function readAll(stream: Readable): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

/** Stored mail: lists and search, the single read (which marks it read), read and archive state, threads. */
export class MailService {
  readonly #db: Db;
  readonly #pages: MailPages;
  readonly #clock: Clock;
  readonly #raw: RawMessages;
  readonly #extractAttachment: AttachmentExtractor;
  readonly #hashAttachments: AttachmentHasher;
  readonly #cleaner: HtmlCleaner;

  constructor(deps: MailServiceDeps) {
    this.#db = deps.db;
    this.#pages = deps.pages;
    this.#clock = deps.clock;
    this.#raw = deps.raw;
    this.#extractAttachment = deps.extractAttachment;
    this.#hashAttachments = deps.hashAttachments;
    this.#cleaner = deps.cleaner;
  }

  /** Newest first (see MailPages.find). `emailId` stands for every email of that email's thread. */
  async list(accountId: string, filter: ListFilter, page: { limit: number; offset: number }): Promise<MailList> {
    const resolved = await resolveListFilter(this.#db, accountId, filter);
    const found = await this.#pages.find(accountId, resolved, this.#clock.now().getTime(), page);
    const ids = found.pageIds.slice(0, page.limit);
    const rows =
      ids.length === 0
        ? []
        : await this.#db
            .selectFrom('emails')
            .select(SUMMARY_COLUMNS.map((column) => `emails.${column}` as const))
            .select(PREVIEW_HEADS)
            .where('emails.id', 'in', ids)
            .execute();
    const byId = new Map(rows.map((row) => [row.id, row]));
    return {
      emails: ids.map((id) => toSummary(byId.get(id)!)),
      total: found.total,
      totalIsExact: found.totalIsExact,
      hasMore: found.pageIds.length > page.limit,
    };
  }

  /** The database's plan for the query that finds a list's first page (see MailPages.explain). */
  async explainList(accountId: string, filter: ListFilter, connection: Db = this.#db): Promise<string[]> {
    const resolved = await resolveListFilter(this.#db, accountId, filter);
    return this.#pages.explain(accountId, resolved, this.#clock.now().getTime(), connection);
  }

  /** Names of the account's domains that have received mail, for the list's `filters.uniqueDomains`. */
  async uniqueDomains(accountId: string): Promise<string[]> {
    const rows = await this.#db
      .selectFrom('domains')
      .select('domains.domain')
      .where('domains.account_id', '=', accountId)
      .where((eb) =>
        eb.exists(
          eb
            .selectFrom('emails')
            .select(sql.lit(1).as('one'))
            .where('emails.account_id', '=', accountId)
            .whereRef('emails.domain_id', '=', 'domains.id'),
        ),
      )
      .orderBy('domains.domain')
      .execute();
    return rows.map((row) => row.domain);
  }

  /** Emails a domain received in the last 24 hours, 7 days and 30 days. */
  async countsByDomain(accountId: string, domainId: string) {
    const now = this.#clock.now().getTime();
    const since = (days: number) => new Date(now - days * 86_400_000).toISOString();
    const row = await this.#db
      .selectFrom('emails')
      .select([
        sql<string | number>`sum(case when received_at >= ${since(1)} then 1 else 0 end)`.as('last24h'),
        sql<string | number>`sum(case when received_at >= ${since(7)} then 1 else 0 end)`.as('last7d'),
        sql<string | number>`count(*)`.as('last30d'),
      ])
      .where('account_id', '=', accountId)
      .where('domain_id', '=', domainId)
      .where('received_at', '>=', since(30))
      .executeTakeFirstOrThrow();
    return { last24h: Number(row.last24h ?? 0), last7d: Number(row.last7d ?? 0), last30d: Number(row.last30d ?? 0) };
  }

  /** The email, without side effects; NotFound(`notFound`) when it is unknown or another account's. */
  async find(accountId: string, id: string, notFound = 'Email not found'): Promise<StoredEmail> {
    if (!ID_PATTERN.test(id)) throw new NotFound(notFound);
    const row = await this.#db
      .selectFrom('emails')
      .select([...EMAIL_COLUMNS])
      .where('account_id', '=', accountId)
      .where('id', '=', id)
      .executeTakeFirst();
    if (!row) throw new NotFound(notFound);
    return toStoredEmail(row);
  }

  /** The email as it is read (its HTML sanitized), without side effects; see find. */
  async findReadable(accountId: string, id: string): Promise<ReadableEmail> {
    return this.#cleaner.readable(await this.find(accountId, id));
  }

  /** The single read: returns the email with its raw message (when small) and marks it read. */
  async read(accountId: string, id: string): Promise<EmailDetail> {
    if (!ID_PATTERN.test(id)) throw new Invalid('Valid email ID is required');
    const email = await this.find(accountId, id);
    if (!email.isRead) {
      const now = isoNow(this.#clock);
      await this.#db
        .updateTable('emails')
        .set({ is_read: 1, read_at: now, updated_at: now })
        .where('id', '=', id)
        .where('account_id', '=', accountId)
        .execute();
      Object.assign(email, { isRead: true, readAt: now, updatedAt: now });
    }
    let rawContent: string | null = null;
    let rawFetchError: string | null = null;
    if (email.rawSize <= RAW_CONTENT_MAX_BYTES) {
      try {
        rawContent = (await readAll(await this.#raw.get(email.rawBlobKey))).toString('utf8');
      } catch (error) {
        rawFetchError = rawFetchErrorOf(error);
      }
    }
    const readable = await this.#cleaner.readable(email);
    return { email: readable, rawContent, rawFetchError, location: this.#raw.location(email.rawBlobKey) };
  }

  /** The HTML body as received, before sanitizing: for a viewer that isolates it (a frame without scripts). */
  async originalHtml(accountId: string, id: string): Promise<string | null> {
    if (!ID_PATTERN.test(id)) throw new Invalid('Valid email ID is required');
    return (await this.find(accountId, id)).htmlBody;
  }

  /** The raw message as received, streamed. */
  async openRaw(accountId: string, id: string): Promise<{ stream: Readable; size: number }> {
    if (!ID_PATTERN.test(id)) throw new Invalid('Valid email ID is required');
    const email = await this.find(accountId, id);
    return { stream: await this.#openBlob(email.rawBlobKey), size: email.rawSize };
  }

  async #openBlob(key: string): Promise<Readable> {
    try {
      return await this.#raw.get(key);
    } catch (error) {
      // A store that cannot be reached now has not lost the content: the edge answers "try again" instead.
      if (isOutage(error)) throw error;
      throw new NotFound('Email content not found');
    }
  }

  /** Sets read and archive state; timestamps follow (set when turned on, cleared when turned off). */
  async update(accountId: string, id: string, change: StateChange): Promise<ReadState> {
    if (!ID_PATTERN.test(id)) throw new Invalid('Valid email ID is required');
    await this.find(accountId, id);
    await this.#apply(accountId, [id], change);
    const [state] = await this.#states(accountId, [id]);
    // Erased (or expired) since it was found: it is gone, as it would have been a moment earlier.
    if (!state) throw new NotFound('Email not found');
    return state;
  }

  /** The same for up to BULK_MAX emails; ids of other accounts or unknown ids are skipped. */
  async bulkUpdate(accountId: string, ids: string[], change: StateChange): Promise<ReadState[]> {
    const unique = [...new Set(ids)].filter((id) => ID_PATTERN.test(id));
    if (unique.length === 0) return [];
    await this.#apply(accountId, unique, change);
    return this.#states(accountId, unique);
  }

  async #apply(accountId: string, ids: string[], change: StateChange): Promise<void> {
    const now = isoNow(this.#clock);
    const scoped = () => this.#db.updateTable('emails').where('account_id', '=', accountId).where('id', 'in', ids);
    if (change.isRead !== undefined) {
      const flag = toFlag(change.isRead);
      await scoped()
        .set({ is_read: flag, read_at: change.isRead ? now : null, updated_at: now })
        .where('is_read', '!=', flag)
        .execute();
    }
    if (change.isArchived !== undefined) {
      const flag = toFlag(change.isArchived);
      await scoped()
        .set({ is_archived: flag, archived_at: change.isArchived ? now : null, updated_at: now })
        .where('is_archived', '!=', flag)
        .execute();
    }
  }

  async #states(accountId: string, ids: string[]): Promise<ReadState[]> {
    const rows = await this.#db
      .selectFrom('emails')
      .select(['id', 'is_read', 'read_at', 'is_archived', 'archived_at', 'updated_at'])
      .where('account_id', '=', accountId)
      .where('id', 'in', ids)
      .execute();
    const byId = new Map(rows.map((row) => [row.id, row]));
    return ids.flatMap((id) => {
      const row = byId.get(id);
      if (!row) return [];
      return [
        {
          id,
          isRead: fromFlag(row.is_read),
          readAt: row.read_at,
          isArchived: fromFlag(row.is_archived),
          archivedAt: row.archived_at,
          updatedAt: row.updated_at,
        },
      ];
    });
  }

  /** Every email of the email's thread in thread order (just the email when it has no thread). */
  async thread(accountId: string, id: string): Promise<{ threadId: string; messages: ReadableEmail[] }> {
    if (!ID_PATTERN.test(id)) throw new Invalid('Valid email ID is required');
    const email = await this.find(accountId, id);
    if (!email.threadId) return { threadId: email.id, messages: [await this.#cleaner.readable(email)] };
    const messages = await loadThreadMessages(this.#db, accountId, email.threadId);
    return { threadId: email.threadId, messages: await this.#cleaner.readableAll(messages) };
  }

  /**
   * Every attachment part of an email, unnamed and same-named ones included, each with the id
   * `att_<index>_<first 12 hex of the SHA-256 of its content>`. The hashes come from one pass over the raw message.
   */
  async listAttachments(accountId: string, emailId: string): Promise<ListedAttachment[]> {
    const email = await this.find(accountId, emailId, 'Email not found or access denied');
    return this.#listed(email);
  }

  async #listed(email: StoredEmail): Promise<ListedAttachment[]> {
    if (email.attachments.length === 0) return [];
    const hashes = await this.#hashAttachments(await this.#openBlob(email.rawBlobKey));
    return email.attachments.map((attachment, index) => ({
      ...attachment,
      index,
      id: `att_${index}_${(hashes[index] ?? '').slice(0, 12)}`,
    }));
  }

  /**
   * Attachment `selector` of an email: the first one with that filename, the one at that 0-based index of the
   * email's attachment list, or the one with that listing id (checked against the content). Streams it from the raw
   * message; nothing is held in memory.
   */
  async openAttachment(
    accountId: string,
    emailId: string,
    selector: { filename: string } | { index: number } | { id: string },
  ): Promise<{ attachment: AttachmentInfo; index: number; stream: Readable }> {
    const email = await this.find(accountId, emailId, 'Email not found or access denied');
    if (email.attachments.length === 0) throw new NotFound('No attachments found in this email');
    const index =
      'index' in selector
        ? selector.index
        : 'id' in selector
          ? await this.#indexOfId(email, selector.id)
          : indexByName(email.attachments, selector.filename);
    const attachment = email.attachments[index];
    if (!attachment || index < 0) throw new NotFound('Attachment not found');
    const extracted = await this.#extractAttachment(await this.#openBlob(email.rawBlobKey), index);
    if (!extracted) throw new NotFound('Attachment not found');
    return { attachment, index, stream: endAfter(extracted.stream, attachment.size) };
  }

  async #indexOfId(email: StoredEmail, id: string): Promise<number> {
    if (!ATTACHMENT_ID.test(id)) return -1;
    return (await this.#listed(email)).findIndex((attachment) => attachment.id === id);
  }
}
