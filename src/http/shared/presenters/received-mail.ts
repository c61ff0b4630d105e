import { Type } from 'typebox';
import type { AddressList, StoredEmail } from '../../../mail/index.ts';

/** Pieces of a received email both families present alike. */

export const REPLY_PLACEHOLDER_MESSAGE = 'Reply validated. Sending replies is not implemented yet; nothing was sent.';

export function subjectOf(subject: string | null): string {
  return subject?.trim() ? subject : 'No Subject';
}

/** The sender's address (the From header's first), as both families' lists and reads give `from`; else its text. */
export const senderAddress = (email: { from: AddressList | null; fromAddress: string | null }) =>
  email.fromAddress ?? email.from?.text ?? '';

/** The formatted sender, `Name <address>` as the header had it, as a thread's messages give `from` in both families. */
export const senderText = (email: { from: AddressList | null; fromAddress: string | null }) =>
  email.from?.text || email.fromAddress || '';

export const AttachmentSchema = Type.Object({
  filename: Type.String(),
  contentType: Type.String(),
  size: Type.Integer(),
  contentId: Type.String(),
});

export function presentAttachments(email: StoredEmail) {
  return email.attachments.map((attachment) => ({
    filename: attachment.filename ?? '',
    contentType: attachment.contentType,
    size: attachment.size,
    contentId: attachment.contentId ?? '',
  }));
}
