import { Type } from 'typebox';
import type { AddressList, EmailDetail, EmailSummary, ReadableEmail, ReadState } from '../../../mail/index.ts';
import { DateTime, Nullable, Pagination } from '../../schemas.ts';
import type { ValidatedReply } from '../../shared/mail-input.ts';
import {
  AttachmentSchema,
  presentAttachments,
  REPLY_PLACEHOLDER_MESSAGE,
  senderAddress,
  senderText,
  subjectOf,
} from '../../shared/presenters/received-mail.ts';
import { GuardSchema, presentGuard, tagsOf } from '../../shared/presenters/rules.ts';

/** Received mail as the v2 family shows it (camelCase). */

const Json = Type.Unknown();

const AddressListSchema = Nullable(
  Type.Object({
    text: Type.String(),
    addresses: Type.Array(Type.Object({ address: Nullable(Type.String()), name: Nullable(Type.String()) })),
  }),
);

const MailItemSchema = Type.Object({
  id: Type.String(),
  emailId: Type.String(),
  messageId: Type.String({ description: '"" when the message has none' }),
  subject: Type.String({ description: '`No Subject` when the email has none' }),
  from: Type.String(),
  fromName: Nullable(Type.String()),
  recipient: Type.String(),
  preview: Type.String({ description: 'First 200 characters of the text, or of the HTML without markup' }),
  receivedAt: DateTime,
  isRead: Type.Boolean(),
  readAt: Nullable(DateTime),
  isArchived: Type.Boolean(),
  archivedAt: Nullable(DateTime),
  hasAttachments: Type.Boolean(),
  attachmentCount: Type.Integer(),
  parseSuccess: Type.Boolean(),
  parseError: Nullable(Type.String()),
  createdAt: DateTime,
});

export const MailListSchema = Type.Object({
  emails: Type.Array(MailItemSchema),
  pagination: Type.Object({
    ...Pagination.properties,
    totalIsExact: Type.Boolean({
      description: 'False when a search matched more than 1,000 emails: `total` is then 1,000 (use hasMore to page)',
    }),
  }),
  filters: Type.Object({ uniqueDomains: Type.Array(Type.String()) }),
});

export const MailDetailSchema = Type.Object({
  id: Type.String(),
  emailId: Type.String(),
  messageId: Type.String({ description: '"" when the message has none' }),
  subject: Type.String(),
  from: Type.String(),
  fromName: Nullable(Type.String()),
  to: Type.String(),
  cc: Nullable(Type.String()),
  bcc: Nullable(Type.String()),
  replyTo: Nullable(Type.String()),
  recipient: Type.String(),
  receivedAt: DateTime,
  isRead: Type.Boolean(),
  readAt: Nullable(DateTime),
  textBody: Type.String({ description: 'Same as content.textBody (the SDK reads it here)' }),
  htmlBody: Type.String({ description: 'Same as content.htmlBody (the SDK reads it here)' }),
  attachments: Type.Array(AttachmentSchema, { description: 'Same as content.attachments' }),
  content: Type.Object({
    textBody: Type.String(),
    htmlBody: Type.String({ description: 'Sanitized: no scripts, event handlers or javascript: links' }),
    rawContent: Type.Optional(Type.String({ description: 'The raw message, for messages up to 1 MiB' })),
    rawContentOmitted: Type.Boolean({
      description: 'True when the raw message is larger than 1 MiB (or unreadable); read it at /api/v2/mail/{id}/raw',
    }),
    attachments: Type.Array(AttachmentSchema),
    headers: Type.Record(Type.String(), Json),
  }),
  addresses: Type.Object({
    from: AddressListSchema,
    to: AddressListSchema,
    cc: AddressListSchema,
    bcc: AddressListSchema,
    replyTo: AddressListSchema,
  }),
  metadata: Type.Object({
    inReplyTo: Type.String({ description: '"" when the message replies to none' }),
    references: Type.Array(Type.String()),
    priority: Type.String({ description: '`normal` when the message sets none' }),
    parseSuccess: Type.Boolean(),
    parseError: Nullable(Type.String()),
    hasAttachments: Type.Boolean(),
    attachmentCount: Type.Integer(),
    hasTextBody: Type.Boolean(),
    hasHtmlBody: Type.Boolean(),
  }),
  security: Type.Object({
    spf: Type.String(),
    dkim: Type.String(),
    dmarc: Type.String(),
    spam: Type.String(),
    virus: Type.String(),
  }),
  guard: Type.Object(
    { ...GuardSchema.properties, tags: Type.Array(Type.String()) },
    { description: 'What the rules and the blocklist did at ingest' },
  ),
  processing: Type.Object({
    processingTimeMs: Type.Integer(),
    timestamp: DateTime,
    receiptTimestamp: DateTime,
    actionType: Type.String(),
    s3Info: Type.Object({
      bucketName: Type.String(),
      objectKey: Type.String(),
      contentFetched: Type.Boolean(),
      contentSize: Type.Integer(),
      error: Nullable(Type.String()),
    }),
    commonHeaders: Type.Object({
      from: Type.Array(Type.String()),
      to: Type.Array(Type.String()),
      messageId: Type.String({ description: '"" when the message has none' }),
      subject: Type.String(),
    }),
  }),
  threadId: Nullable(Type.String()),
  threadPosition: Nullable(Type.Integer()),
  createdAt: DateTime,
  updatedAt: DateTime,
});

export const ReadStateSchema = Type.Object({
  id: Type.String(),
  isRead: Type.Boolean(),
  readAt: Nullable(DateTime),
  isArchived: Type.Boolean(),
  archivedAt: Nullable(DateTime),
  updatedAt: DateTime,
});

export const ThreadMessageSchema = Type.Object({
  id: Type.String(),
  emailId: Type.String(),
  messageId: Type.String({ description: '"" when the message has none' }),
  type: Type.Literal('inbound'),
  threadPosition: Nullable(Type.Integer()),
  subject: Type.String(),
  from: Type.String(),
  fromName: Nullable(Type.String()),
  to: Type.String(),
  cc: Nullable(Type.String()),
  recipient: Type.String(),
  textBody: Type.String(),
  htmlBody: Type.String(),
  receivedAt: DateTime,
  isRead: Type.Boolean(),
  readAt: Nullable(DateTime),
  isArchived: Type.Boolean(),
  hasAttachments: Type.Boolean(),
  attachments: Type.Array(AttachmentSchema),
  inReplyTo: Nullable(Type.String()),
  references: Type.Array(Type.String()),
  // Inbound's own members for a thread's message, which code written against it reads.
  sentAt: Type.Null({ description: 'Set on sent messages, which Mailroom has none of' }),
  content: Type.Object({ textBody: Type.String(), htmlBody: Type.String(), attachments: Type.Array(AttachmentSchema) }),
  addresses: Type.Object({ from: AddressListSchema, to: AddressListSchema }),
  metadata: Type.Object({
    inReplyTo: Nullable(Type.String()),
    references: Type.Array(Type.String()),
    parseSuccess: Type.Boolean(),
    parseError: Nullable(Type.String()),
  }),
});

export const ReplyPlaceholderSchema = Type.Object({
  message: Type.String(),
  originalEmailId: Type.String(),
  replyData: Type.Object({
    to: Type.String(),
    subject: Type.String(),
    hasTextBody: Type.Boolean(),
    hasHtmlBody: Type.Boolean(),
    attachmentCount: Type.Integer(),
  }),
  status: Type.Literal('pending_implementation'),
});

const addressesOf = (list: AddressList | null) =>
  (list?.addresses ?? []).flatMap((entry) => (entry.address ? [entry.address] : []));

/** The fields a list item, a whole email and a thread's message share: who sent what. */
function presentMailHead(
  email: Pick<EmailSummary, 'id' | 'messageId' | 'subject' | 'fromAddress' | 'from' | 'fromName'>,
) {
  return {
    id: email.id,
    emailId: email.id,
    messageId: email.messageId ?? '',
    subject: subjectOf(email.subject),
    from: senderAddress(email),
    fromName: email.fromName,
  };
}

export function presentMailItem(email: EmailSummary) {
  return {
    ...presentMailHead(email),
    recipient: email.recipient,
    preview: email.preview,
    receivedAt: email.receivedAt,
    isRead: email.isRead,
    readAt: email.readAt,
    isArchived: email.isArchived,
    archivedAt: email.archivedAt,
    hasAttachments: email.attachmentCount > 0,
    attachmentCount: email.attachmentCount,
    parseSuccess: email.parseSuccess,
    parseError: email.parseError,
    createdAt: email.createdAt,
  };
}

export function presentMailDetail({ email, rawContent, rawFetchError, location }: EmailDetail) {
  const htmlBody = email.cleanedHtml ?? '';
  const textBody = email.textBody ?? '';
  const attachments = presentAttachments(email);
  return {
    ...presentMailHead(email),
    to: email.to?.text ?? email.recipient,
    cc: email.cc?.text ?? null,
    bcc: email.bcc?.text ?? null,
    replyTo: email.replyTo?.text ?? null,
    recipient: email.recipient,
    receivedAt: email.receivedAt,
    isRead: email.isRead,
    readAt: email.readAt,
    textBody,
    htmlBody,
    attachments,
    content: {
      textBody,
      htmlBody,
      ...(rawContent === null ? {} : { rawContent }),
      rawContentOmitted: rawContent === null,
      attachments,
      headers: email.headers,
    },
    addresses: { from: email.from, to: email.to, cc: email.cc, bcc: email.bcc, replyTo: email.replyTo },
    metadata: {
      // The spec types both strings: no In-Reply-To is "", no priority header is what it means, normal.
      inReplyTo: email.inReplyTo ?? '',
      references: email.references,
      priority: email.priority ?? 'normal',
      parseSuccess: email.parseSuccess,
      parseError: email.parseError,
      hasAttachments: email.attachments.length > 0,
      attachmentCount: email.attachments.length,
      hasTextBody: Boolean(email.textBody),
      hasHtmlBody: Boolean(email.htmlBody),
    },
    security: {
      spf: email.verdicts.spf,
      dkim: email.verdicts.dkim,
      dmarc: email.verdicts.dmarc,
      spam: email.verdicts.spam,
      virus: email.verdicts.virus,
    },
    guard: { ...presentGuard(email), tags: tagsOf(email) },
    processing: {
      processingTimeMs: email.processingMs,
      timestamp: email.createdAt,
      receiptTimestamp: email.receivedAt,
      actionType: 'store',
      s3Info: {
        bucketName: location.bucketName,
        objectKey: location.objectKey,
        contentFetched: rawContent !== null,
        contentSize: email.rawSize,
        error: rawFetchError,
      },
      commonHeaders: {
        from: email.from ? [email.from.text] : [],
        to: addressesOf(email.to),
        messageId: email.messageId ?? '',
        subject: subjectOf(email.subject),
      },
    },
    threadId: email.threadId,
    threadPosition: email.threadPosition,
    createdAt: email.createdAt,
    updatedAt: email.updatedAt,
  };
}

export function presentReadState(state: ReadState) {
  return { ...state };
}

export function presentThreadMessage(email: ReadableEmail) {
  const textBody = email.textBody ?? '';
  const htmlBody = email.cleanedHtml ?? '';
  const attachments = presentAttachments(email);
  return {
    ...presentMailHead(email),
    from: senderText(email),
    type: 'inbound' as const,
    threadPosition: email.threadPosition,
    to: email.to?.text ?? email.recipient,
    cc: email.cc?.text ?? null,
    recipient: email.recipient,
    textBody,
    htmlBody,
    receivedAt: email.receivedAt,
    isRead: email.isRead,
    readAt: email.readAt,
    isArchived: email.isArchived,
    hasAttachments: attachments.length > 0,
    attachments,
    inReplyTo: email.inReplyTo,
    references: email.references,
    sentAt: null,
    content: { textBody, htmlBody, attachments },
    addresses: { from: email.from, to: email.to },
    metadata: {
      inReplyTo: email.inReplyTo,
      references: email.references,
      parseSuccess: email.parseSuccess,
      parseError: email.parseError,
    },
  };
}

export function presentReplyPlaceholder(reply: ValidatedReply) {
  return {
    message: REPLY_PLACEHOLDER_MESSAGE,
    originalEmailId: reply.original.id,
    replyData: {
      to: reply.to,
      subject: reply.subject,
      hasTextBody: reply.hasTextBody,
      hasHtmlBody: reply.hasHtmlBody,
      attachmentCount: reply.attachmentCount,
    },
    status: 'pending_implementation' as const,
  };
}
