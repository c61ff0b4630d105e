import { decodeHTML } from 'entities';
import { sql } from 'kysely';
import { firstCharacters } from '../core/index.ts';
import { type Db, type EmailsTable, fromFlag, fromJson, toFlag, type Verdict } from '../db/index.ts';
import type { AddressList, AttachmentInfo, ParsedMessage } from '../mime/index.ts';

export type { AddressList, AttachmentInfo };

/** The message's own fields, as MIME parsing read them (the Date header is `sentDate` here). */
type MessageFields = Omit<ParsedMessage, 'date' | 'inReplyToIds'>;

/**
 * A rule or blocklist entry that matched an email at ingest, as the email records it. `applied` is false for a
 * `block` or `route` match that an earlier one (lower priority number) overrode; tags always apply.
 */
export interface RuleMatch {
  ruleId: string;
  name: string;
  source: 'rule' | 'blocklist';
  action: 'block' | 'route' | 'tag';
  applied: boolean;
  /** The endpoint a `route` match sends the mail to. */
  endpointId?: string;
  /** The tag a `tag` match adds. */
  tag?: string;
}

/** What a list row and a whole stored email both show of an email. */
interface EmailBasics {
  id: string;
  messageId: string | null;
  subject: string | null;
  fromAddress: string | null;
  fromName: string | null;
  from: AddressList | null;
  to: AddressList | null;
  cc: AddressList | null;
  recipient: string;
  parseSuccess: boolean;
  parseError: string | null;
  threadId: string | null;
  threadPosition: number | null;
  isRead: boolean;
  readAt: string | null;
  isArchived: boolean;
  archivedAt: string | null;
  receivedAt: string;
  createdAt: string;
}

/** A received email as the API families present it (one row per accepted recipient). */
export interface StoredEmail extends MessageFields, EmailBasics {
  accountId: string;
  domainId: string | null;
  /** The envelope sender (MAIL FROM), or null for a null reverse-path. */
  mailFrom: string | null;
  sentDate: string | null;
  rawBlobKey: string;
  rawSize: number;
  verdicts: { spf: Verdict; dkim: Verdict; dmarc: Verdict; arc: Verdict; spam: Verdict; virus: Verdict };
  processingMs: number;
  /** In the order the rules ran; empty when none matched. */
  ruleMatches: RuleMatch[];
  updatedAt: string;
}

/** One accepted recipient's copy of a received message, as ingest hands it over to be stored. */
export interface NewEmail {
  id: string;
  accountId: string;
  domainId: string | null;
  addressId: string | null;
  recipient: string;
  mailFrom: string | null;
  helo: string | null;
  clientIp: string | null;
  parsed: ParsedMessage;
  rawBlobKey: string;
  rawSize: number;
  rawSha256: string;
  verdicts: StoredEmail['verdicts'] & { authResults: string | null };
  ruleMatches: RuleMatch[];
  processingMs: number;
  receivedAt: string;
  createdAt: string;
}

/** A list row: everything but the bodies, with the start of the text (or HTML) for the preview. */
export interface EmailSummary extends EmailBasics {
  preview: string;
  attachmentCount: number;
}

/** What a list shows of each email. */
export const SUMMARY_COLUMNS = [
  'id',
  'message_id',
  'subject',
  'from_address',
  'from_name',
  'from_json',
  'to_json',
  'cc_json',
  'recipient',
  'attachment_count',
  'parse_success',
  'parse_error',
  'thread_id',
  'thread_position',
  'is_read',
  'read_at',
  'is_archived',
  'archived_at',
  'received_at',
  'created_at',
] as const satisfies ReadonlyArray<keyof EmailsTable>;

/** Every stored column but PostgreSQL's generated search vector, which no reader needs. */
export const EMAIL_COLUMNS = [
  ...SUMMARY_COLUMNS,
  'account_id',
  'domain_id',
  'address_id',
  'mail_from',
  'helo',
  'client_ip',
  'bcc_json',
  'reply_to_json',
  'sent_date',
  'in_reply_to',
  'references_json',
  'priority',
  'text_body',
  'html_body',
  'headers_json',
  'attachments_json',
  'raw_blob_key',
  'raw_size',
  'raw_sha256',
  'spf',
  'dkim',
  'dmarc',
  'arc',
  'spam',
  'virus',
  'auth_results',
  'processing_ms',
  'updated_at',
  'rule_matches_json',
] as const satisfies ReadonlyArray<keyof EmailsTable>;

/** How much of each body a list row reads: enough for a 200-character preview, even after HTML markup is gone. */
const TEXT_HEAD_CHARS = 2_000;
const HTML_HEAD_CHARS = 50_000;

/** The start of the bodies a preview is made from (the HTML only when there is no text). */
export const PREVIEW_HEADS = [
  sql<string | null>`substr(emails.text_body, 1, ${sql.lit(TEXT_HEAD_CHARS)})`.as('text_head'),
  sql<
    string | null
  >`case when emails.text_body is null then substr(emails.html_body, 1, ${sql.lit(HTML_HEAD_CHARS)}) end`.as(
    'html_head',
  ),
];

export type SummaryRow = Pick<EmailsTable, (typeof SUMMARY_COLUMNS)[number]> & {
  text_head: string | null;
  html_head: string | null;
};

/** The readable text of an HTML fragment: no head, style, script or comments, tags dropped, entities decoded. */
function htmlToText(html: string): string {
  return decodeHTML(
    html
      .replace(/<!--[\s\S]*?(-->|$)/g, ' ')
      .replace(/<(head|style|script|title)\b[\s\S]*?(<\/\1\s*>|$)/gi, ' ')
      .replace(/<[^>]*>?/g, ' '),
  );
}

/**
 * The first 200 characters (code points, so an emoji is never cut in half) of the text body, or of the HTML with
 * markup stripped; runs of whitespace become one space.
 */
export function previewOf(text: string | null, html: string | null): string {
  const source = text ?? (html ? htmlToText(html) : '');
  return firstCharacters(source.replace(/\s+/g, ' ').trim(), 200);
}

/** The columns `EmailBasics` is decoded from. */
type BasicsColumn = Exclude<(typeof SUMMARY_COLUMNS)[number], 'attachment_count'>;

function emailBasics(row: Pick<EmailsTable, BasicsColumn>): EmailBasics {
  return {
    id: row.id,
    messageId: row.message_id,
    subject: row.subject,
    fromAddress: row.from_address,
    fromName: row.from_name,
    from: fromJson(row.from_json, null),
    to: fromJson(row.to_json, null),
    cc: fromJson(row.cc_json, null),
    recipient: row.recipient,
    parseSuccess: fromFlag(row.parse_success),
    parseError: row.parse_error,
    threadId: row.thread_id,
    threadPosition: row.thread_position === null ? null : Number(row.thread_position),
    isRead: fromFlag(row.is_read),
    readAt: row.read_at,
    isArchived: fromFlag(row.is_archived),
    archivedAt: row.archived_at,
    receivedAt: row.received_at,
    createdAt: row.created_at,
  };
}

export function toSummary(row: SummaryRow): EmailSummary {
  return {
    ...emailBasics(row),
    preview: previewOf(row.text_head, row.html_head),
    attachmentCount: Number(row.attachment_count),
  };
}

export function toStoredEmail(row: Pick<EmailsTable, (typeof EMAIL_COLUMNS)[number]>): StoredEmail {
  return {
    ...emailBasics(row),
    accountId: row.account_id,
    domainId: row.domain_id,
    mailFrom: row.mail_from,
    bcc: fromJson(row.bcc_json, null),
    replyTo: fromJson(row.reply_to_json, null),
    // A year past 9999 is no date to the API (RFC 3339), as parsing now stores it; older rows may hold `+099999-…`.
    sentDate: row.sent_date && /^\d{4}-/.test(row.sent_date) ? row.sent_date : null,
    inReplyTo: row.in_reply_to,
    references: fromJson(row.references_json, []),
    priority: row.priority,
    textBody: row.text_body,
    htmlBody: row.html_body,
    headers: fromJson(row.headers_json, {}),
    attachments: fromJson(row.attachments_json, []),
    rawBlobKey: row.raw_blob_key,
    rawSize: Number(row.raw_size),
    verdicts: { spf: row.spf, dkim: row.dkim, dmarc: row.dmarc, arc: row.arc, spam: row.spam, virus: row.virus },
    processingMs: Number(row.processing_ms),
    ruleMatches: fromJson(row.rule_matches_json, []),
    updatedAt: row.updated_at,
  };
}

const json = (value: unknown) => (value === null || value === undefined ? null : JSON.stringify(value));

/** The row a new email is stored as, outside any thread until ingest places it in one. */
export function toEmailRow(email: NewEmail): EmailsTable {
  const { parsed, verdicts } = email;
  return {
    id: email.id,
    account_id: email.accountId,
    domain_id: email.domainId,
    address_id: email.addressId,
    recipient: email.recipient,
    mail_from: email.mailFrom,
    helo: email.helo,
    client_ip: email.clientIp,
    message_id: parsed.messageId,
    subject: parsed.subject,
    from_address: parsed.from?.addresses[0]?.address ?? null,
    from_name: parsed.from?.addresses[0]?.name ?? null,
    from_json: json(parsed.from),
    to_json: json(parsed.to),
    cc_json: json(parsed.cc),
    bcc_json: json(parsed.bcc),
    reply_to_json: json(parsed.replyTo),
    sent_date: parsed.date,
    in_reply_to: parsed.inReplyTo,
    references_json: JSON.stringify(parsed.references),
    priority: parsed.priority,
    text_body: parsed.textBody,
    html_body: parsed.htmlBody,
    headers_json: JSON.stringify(parsed.headers),
    attachments_json: JSON.stringify(parsed.attachments),
    attachment_count: parsed.attachments.length,
    parse_success: toFlag(parsed.parseSuccess),
    parse_error: parsed.parseError,
    raw_blob_key: email.rawBlobKey,
    raw_size: email.rawSize,
    raw_sha256: email.rawSha256,
    spf: verdicts.spf,
    dkim: verdicts.dkim,
    dmarc: verdicts.dmarc,
    arc: verdicts.arc,
    spam: verdicts.spam,
    virus: verdicts.virus,
    auth_results: verdicts.authResults,
    thread_id: null,
    thread_position: null,
    is_read: 0,
    read_at: null,
    is_archived: 0,
    archived_at: null,
    processing_ms: email.processingMs,
    received_at: email.receivedAt,
    created_at: email.createdAt,
    updated_at: email.createdAt,
    rule_matches_json: email.ruleMatches.length > 0 ? JSON.stringify(email.ruleMatches) : null,
  };
}

/** Any account's email by id, or undefined when it is gone. */
export async function findStoredEmail(db: Db, id: string): Promise<StoredEmail | undefined> {
  return (await findStoredEmails(db, [id])).get(id);
}

/** Any accounts' emails by id (the delivery worker's read of a claim's emails); those gone are missing. */
export async function findStoredEmails(db: Db, ids: readonly string[]): Promise<Map<string, StoredEmail>> {
  if (ids.length === 0) return new Map();
  const rows = await db
    .selectFrom('emails')
    .select([...EMAIL_COLUMNS])
    .where('id', 'in', [...new Set(ids)])
    .execute();
  return new Map(rows.map((row) => [row.id, toStoredEmail(row)]));
}

/** Whether the account has an email with this id. */
export async function hasEmail(db: Db, accountId: string, id: string): Promise<boolean> {
  const row = await db
    .selectFrom('emails')
    .select('id')
    .where('id', '=', id)
    .where('account_id', '=', accountId)
    .executeTakeFirst();
  return row !== undefined;
}

/** Every email of one of the account's threads, in thread order. */
export async function loadThreadMessages(db: Db, accountId: string, threadId: string): Promise<StoredEmail[]> {
  const rows = await db
    .selectFrom('emails')
    .select([...EMAIL_COLUMNS])
    .where('account_id', '=', accountId)
    .where('thread_id', '=', threadId)
    .orderBy('thread_position')
    .orderBy('received_at')
    .orderBy('id')
    .execute();
  return rows.map(toStoredEmail);
}
