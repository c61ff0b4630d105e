import { Type } from 'typebox';
import type { AddressList, StoredEmail } from '../../../mail/index.ts';

/** Pieces of a received email both families present alike. */

export const REPLY_PLACEHOLDER_MESSAGE = 'Reply validated. Sending replies is not implemented yet; nothing was sent.';

export function subjectOf(subject: string | null): string {
  return subject?.trim() ? subject : 'No Subject';
}

/** The sender's address (the From header's first), as both families' `from` gives it; its text when it has none. */
export const senderAddress = (email: { from: AddressList | null; fromAddress: string | null }) =>
  email.fromAddress ?? email.from?.text ?? '';

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
