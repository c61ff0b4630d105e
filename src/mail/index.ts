export type { MailFilter, TimeRange } from '../search/index.ts';
export {
  BULK_MAX,
  bulkIdsOf,
  type E2ReplyDraft,
  type ReplyDraft,
  type StateChange,
  stateChangeOf,
  type ValidatedReply,
} from './mail-input.ts';
export {
  type AttachmentExtractor,
  type EmailDetail,
  type MailList,
  MailService,
  RAW_CONTENT_MAX_BYTES,
  type RawMessages,
  type ReadState,
} from './mail-service.ts';
export { sanitizeEmailHtml } from './sanitize-email-html.ts';
export {
  type AddressList,
  type AttachmentInfo,
  type EmailSummary,
  htmlToText,
  type StoredEmail,
} from './stored-email.ts';
export { type ThreadListQuery, type ThreadSummary, ThreadsService } from './threads-service.ts';
