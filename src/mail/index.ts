export type { MailFilter, TimeRange } from './mail-filters.ts';
export {
  type AttachmentExtractor,
  COUNT_LIMIT,
  type EmailDetail,
  type MailList,
  MailService,
  RAW_CONTENT_MAX_BYTES,
  type RawMessages,
  type ReadState,
  type StateChange,
} from './mail-service.ts';
export { sanitizeEmailHtml } from './sanitize-email-html.ts';
export { parseSearch, type SearchQuery } from './search-query.ts';
export type { SqlDialect } from './search-sql.ts';
export {
  type AddressList,
  type AttachmentInfo,
  type EmailSummary,
  htmlToText,
  type StoredEmail,
} from './stored-email.ts';
export { type ThreadListQuery, type ThreadSummary, ThreadsService } from './threads-service.ts';
