export type { MailFilter } from '../search/index.ts';
export { HtmlCleaner, type ReadableEmail } from './html-cleaner.ts';
export { type ListFilter, resolveListFilter } from './list-filter.ts';
export { receivedSince } from './mail-activity.ts';
export {
  type AttachmentExtractor,
  type AttachmentHasher,
  type EmailDetail,
  type ListedAttachment,
  type MailList,
  MailService,
  type RawMessages,
  type ReadState,
  type StateChange,
} from './mail-service.ts';
export {
  type AddressList,
  type AttachmentInfo,
  type EmailSummary,
  findStoredEmail,
  findStoredEmails,
  hasEmail,
  type NewEmail,
  type RuleMatch,
  type StoredEmail,
  toEmailRow,
  toStoredEmail,
} from './stored-email.ts';
export { type ThreadListQuery, type ThreadSummary, ThreadsService } from './threads-service.ts';
