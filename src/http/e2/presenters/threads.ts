import { Type } from 'typebox';
import type { ReadableEmail, ThreadSummary } from '../../../mail/index.ts';
import { DateTime, Nullable } from '../../schemas.ts';
import { presentAttachments, senderText, subjectOf } from '../../shared/presenters/received-mail.ts';
import { tagsOf } from '../../shared/presenters/rules.ts';
import { addressesOf } from './emails.ts';

/** Threads (conversations) in the e2 family's snake_case shapes. Every message is inbound: Mailroom sends nothing. */

const threadFields = {
  id: Type.String(),
  root_message_id: Type.String(),
  normalized_subject: Nullable(Type.String()),
  participant_emails: Type.Array(Type.String()),
  participant_names: Type.Array(Type.String()),
  message_count: Type.Integer(),
  last_message_at: DateTime,
  created_at: DateTime,
};

export const ThreadItemSchema = Type.Object({
  ...threadFields,
  latest_message: Nullable(
    Type.Object({
      id: Type.String(),
      type: Type.Literal('inbound'),
      subject: Nullable(Type.String()),
      from_text: Type.String(),
      text_preview: Nullable(Type.String()),
      is_read: Type.Boolean(),
      has_attachments: Type.Boolean(),
      date: Nullable(DateTime),
    }),
  ),
  has_unread: Type.Boolean(),
  is_archived: Type.Boolean(),
  unread_count: Type.Integer(),
});

export const ThreadDetailSchema = Type.Object({
  thread: Type.Object({ ...threadFields, updated_at: DateTime }),
  messages: Type.Array(
    Type.Object({
      id: Type.String(),
      message_id: Nullable(Type.String()),
      type: Type.Literal('inbound'),
      thread_position: Type.Integer(),
      subject: Nullable(Type.String()),
      text_body: Nullable(Type.String()),
      html_body: Nullable(Type.String()),
      from: Type.String(),
      from_name: Nullable(Type.String()),
      from_address: Nullable(Type.String()),
      to: Type.Array(Type.String()),
      cc: Type.Array(Type.String()),
      bcc: Type.Array(Type.String()),
      date: Nullable(DateTime),
      received_at: DateTime,
      sent_at: Type.Null(),
      is_read: Type.Boolean(),
      read_at: Nullable(DateTime),
      has_attachments: Type.Boolean(),
      attachments: Type.Array(
        Type.Object({
          filename: Type.String(),
          contentType: Type.String(),
          size: Type.Integer(),
          contentId: Type.String(),
        }),
      ),
      in_reply_to: Nullable(Type.String()),
      references: Type.Array(Type.String()),
      headers: Type.Record(Type.String(), Type.Unknown()),
      tags: Type.Array(Type.Object({ name: Type.Literal('tag'), value: Type.String() }), {
        description: "Added by tag rules at ingest, each as `{name: 'tag', value}` (inboundemail's tag type)",
      }),
    }),
  ),
  total_count: Type.Integer(),
});

function threadBase(thread: ThreadSummary) {
  return {
    id: thread.id,
    root_message_id: thread.rootMessageId,
    normalized_subject: thread.normalizedSubject || null,
    participant_emails: thread.participantEmails,
    participant_names: thread.participantNames,
    message_count: thread.messageCount,
    last_message_at: thread.lastMessageAt,
    created_at: thread.createdAt,
  };
}

export function presentThreadItem(thread: ThreadSummary) {
  const latest = thread.latest;
  return {
    ...threadBase(thread),
    latest_message: latest
      ? {
          id: latest.id,
          type: 'inbound' as const,
          subject: subjectOf(latest.subject),
          from_text: senderText(latest),
          text_preview: latest.preview,
          is_read: latest.isRead,
          has_attachments: latest.attachmentCount > 0,
          date: latest.receivedAt,
        }
      : null,
    has_unread: thread.unreadCount > 0,
    is_archived: thread.isArchived,
    unread_count: thread.unreadCount,
  };
}

function presentThreadMessageE2(email: ReadableEmail, index: number) {
  return {
    id: email.id,
    message_id: email.messageId,
    type: 'inbound' as const,
    thread_position: email.threadPosition ?? index + 1,
    subject: email.subject,
    text_body: email.textBody,
    html_body: email.cleanedHtml,
    from: senderText(email),
    from_name: email.fromName,
    from_address: email.fromAddress,
    to: addressesOf(email.to),
    cc: addressesOf(email.cc),
    bcc: addressesOf(email.bcc),
    date: email.sentDate,
    received_at: email.receivedAt,
    sent_at: null,
    is_read: email.isRead,
    read_at: email.readAt,
    has_attachments: email.attachments.length > 0,
    attachments: presentAttachments(email),
    in_reply_to: email.inReplyTo,
    references: email.references,
    headers: email.headers,
    tags: tagsOf(email).map((value) => ({ name: 'tag' as const, value })),
  };
}

export function presentThreadDetail(thread: ThreadSummary, messages: ReadableEmail[]) {
  return {
    thread: { ...threadBase(thread), updated_at: thread.updatedAt },
    messages: messages.map(presentThreadMessageE2),
    total_count: messages.length,
  };
}
