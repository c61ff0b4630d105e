import { Type } from 'typebox';
import type { AddressList, EmailSummary, ReadableEmail } from '../../../mail/index.ts';
import { DateTime, Nullable } from '../../schemas.ts';
import {
  AttachmentSchema,
  presentAttachments,
  senderAddress,
  subjectOf,
} from '../../shared/presenters/received-mail.ts';
import { GuardSchema, presentGuard, tagsOf } from '../../shared/presenters/rules.ts';

/** Received mail in the e2 family's snake_case shapes (`type: 'received'`). */

/** The fields a list item and a whole email start with. */
const emailHead = {
  id: Type.String(),
  type: Type.Literal('received'),
  message_id: Nullable(Type.String()),
  from: Type.String(),
  from_name: Nullable(Type.String()),
  to: Type.Array(Type.String()),
  cc: Type.Array(Type.String()),
};

/** The reader's state and the thread, as a list item and a whole email carry them. */
const readState = {
  is_read: Type.Boolean(),
  read_at: Nullable(DateTime),
  is_archived: Type.Boolean(),
  thread_id: Nullable(Type.String()),
};

export const E2EmailItemSchema = Type.Object({
  ...emailHead,
  subject: Type.String(),
  preview: Type.String(),
  status: Type.Union([Type.Literal('delivered'), Type.Literal('failed')]),
  created_at: DateTime,
  sent_at: Type.Null(),
  scheduled_at: Type.Null(),
  has_attachments: Type.Boolean(),
  attachment_count: Type.Integer(),
  ...readState,
});

export const E2EmailSchema = Type.Object({
  object: Type.Literal('email'),
  ...emailHead,
  bcc: Type.Array(Type.String()),
  reply_to: Type.Array(Type.String()),
  recipient: Type.String(),
  subject: Type.String(),
  html: Nullable(Type.String()),
  text: Nullable(Type.String()),
  status: Type.Union([Type.Literal('delivered'), Type.Literal('failed')]),
  created_at: DateTime,
  received_at: DateTime,
  sent_at: Type.Null(),
  scheduled_at: Type.Null(),
  has_attachments: Type.Boolean(),
  attachments: Type.Array(AttachmentSchema),
  ...readState,
  thread_position: Nullable(Type.Integer()),
  headers: Type.Record(Type.String(), Type.Unknown()),
  tags: Type.Array(Type.String(), { description: 'Added by tag rules at ingest' }),
  guard: GuardSchema,
});

export const addressesOf = (list: AddressList | null): string[] =>
  (list?.addresses ?? []).flatMap((entry) => (entry.address ? [entry.address] : []));

function presentEmailHead(
  email: Pick<EmailSummary, 'id' | 'messageId' | 'from' | 'fromAddress' | 'fromName' | 'to' | 'cc' | 'recipient'>,
) {
  return {
    id: email.id,
    type: 'received' as const,
    message_id: email.messageId,
    from: senderAddress(email),
    from_name: email.fromName,
    to: email.to ? addressesOf(email.to) : [email.recipient],
    cc: addressesOf(email.cc),
  };
}

function presentReadState(email: Pick<EmailSummary, 'isRead' | 'readAt' | 'isArchived' | 'threadId'>) {
  return { is_read: email.isRead, read_at: email.readAt, is_archived: email.isArchived, thread_id: email.threadId };
}

export function presentE2EmailItem(email: EmailSummary) {
  return {
    ...presentEmailHead(email),
    subject: subjectOf(email.subject),
    preview: email.preview,
    status: email.parseSuccess ? ('delivered' as const) : ('failed' as const),
    created_at: email.createdAt,
    sent_at: null,
    scheduled_at: null,
    has_attachments: email.attachmentCount > 0,
    attachment_count: email.attachmentCount,
    ...presentReadState(email),
  };
}

export function presentE2Email(email: ReadableEmail) {
  return {
    object: 'email' as const,
    ...presentEmailHead(email),
    bcc: addressesOf(email.bcc),
    reply_to: addressesOf(email.replyTo),
    recipient: email.recipient,
    subject: subjectOf(email.subject),
    html: email.cleanedHtml,
    text: email.textBody,
    status: email.parseSuccess ? ('delivered' as const) : ('failed' as const),
    created_at: email.createdAt,
    received_at: email.receivedAt,
    sent_at: null,
    scheduled_at: null,
    has_attachments: email.attachments.length > 0,
    attachments: presentAttachments(email),
    ...presentReadState(email),
    thread_position: email.threadPosition,
    headers: email.headers,
    tags: tagsOf(email),
    guard: presentGuard(email),
  };
}
