import { Invalid } from '../../core/index.ts';
import type { StateChange, StoredEmail } from '../../mail/index.ts';

/** Request bodies checked by hand, so each wrong value gets the reference's own message. */

export interface ReplyDraft {
  emailId?: unknown;
  to?: unknown;
  subject?: unknown;
  textBody?: unknown;
  htmlBody?: unknown;
  attachments?: unknown;
}

export interface ValidatedReply {
  original: StoredEmail;
  to: string;
  subject: string;
  hasTextBody: boolean;
  hasHtmlBody: boolean;
  attachmentCount: number;
}

/** The most emails one bulk update may name. */
const BULK_MAX = 100;

/** Reads `{isRead?, isArchived?}` from a request body, with the reference's messages for wrong types. */
export function stateChangeOf(input: { isRead?: unknown; isArchived?: unknown } | undefined): StateChange {
  const change: StateChange = {};
  if (input?.isRead !== undefined) {
    if (typeof input.isRead !== 'boolean') throw new Invalid('isRead must be a boolean');
    change.isRead = input.isRead;
  }
  if (input?.isArchived !== undefined) {
    if (typeof input.isArchived !== 'boolean') throw new Invalid('isArchived must be a boolean');
    change.isArchived = input.isArchived;
  }
  if (change.isRead === undefined && change.isArchived === undefined) {
    throw new Invalid('At least one of isRead or isArchived must be provided');
  }
  return change;
}

/** The ids of a bulk update: a non-empty array of at most BULK_MAX strings. */
export function bulkIdsOf(input: unknown): string[] {
  if (!Array.isArray(input) || input.length === 0 || !input.every((id) => typeof id === 'string')) {
    throw new Invalid('emailIds must be a non-empty array of strings');
  }
  if (input.length > BULK_MAX) throw new Invalid(`Cannot update more than ${BULK_MAX} emails at once`);
  return input;
}

const EMAIL_FORMAT = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;

/**
 * A reply's attachment as the spec and @inboundemail/sdk give it: a filename, an optional contentType, and its
 * content as base64 text or a `path` to fetch it from.
 */
function isAttachment(value: unknown): boolean {
  if (typeof value !== 'object' || value === null) return false;
  const { filename, contentType, content, path } = value as Record<string, unknown>;
  const base64 = typeof content === 'string' && /^[A-Za-z0-9+/\s]*={0,2}\s*$/.test(content);
  return (
    typeof filename === 'string' &&
    filename !== '' &&
    (contentType === undefined || typeof contentType === 'string') &&
    (base64 || (content === undefined && typeof path === 'string' && path !== ''))
  );
}

/** Checks a v2 reply (`POST /api/v2/mail`); `find` loads the original or throws `Original email not found`. */
export async function checkReply(
  draft: ReplyDraft,
  find: (emailId: string) => Promise<StoredEmail>,
): Promise<ValidatedReply> {
  const text = (value: unknown) => (typeof value === 'string' && value.trim() !== '' ? value : undefined);
  const emailId = text(draft.emailId);
  if (!emailId) throw new Invalid('emailId is required');
  const to = text(draft.to);
  const subject = text(draft.subject);
  if (!to || !subject) throw new Invalid('to and subject are required');
  if (!EMAIL_FORMAT.test(to)) throw new Invalid('Invalid email format for to field');
  const hasTextBody = text(draft.textBody) !== undefined;
  const hasHtmlBody = text(draft.htmlBody) !== undefined;
  if (!hasTextBody && !hasHtmlBody) throw new Invalid('Either textBody or htmlBody must be provided');
  if (draft.attachments !== undefined && !Array.isArray(draft.attachments)) {
    throw new Invalid('attachments must be an array');
  }
  for (const attachment of draft.attachments ?? []) {
    if (!isAttachment(attachment)) {
      throw new Invalid('Each attachment needs a filename and its content as base64 text (or a path)');
    }
  }
  const original = await find(emailId);
  return {
    original,
    to,
    subject,
    hasTextBody,
    hasHtmlBody,
    attachmentCount: Array.isArray(draft.attachments) ? draft.attachments.length : 0,
  };
}
