export type { MailFilter, TimeRange } from './mail-filters.ts';
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
  COUNT_LIMIT,
  type EmailDetail,
  type MailList,
  MailService,
  RAW_CONTENT_MAX_BYTES,
  type RawMessages,
  type ReadState,
} from './mail-service.ts';
export { sanitizeEmailHtml } from './sanitize-email-html.ts';
export { parseSearch, type SearchQuery } from './search-query.ts';
export type { SqlDialect } from './search-sql.ts';
export {
  type AddressList,
  type AttachmentInfo,
  type EmailSummary,
  findStoredEmail,
  hasEmail,
  htmlToText,
  type NewEmail,
  type StoredEmail,
  toEmailRow,
} from './stored-email.ts';
export { type ThreadListQuery, type ThreadSummary, ThreadsService } from './threads-service.ts';
