export {
  type AttachmentWithContent,
  attachmentsWithContent,
  type ExtractedAttachment,
  extractAttachment,
  hashAttachments,
} from './extract-attachment.ts';
export {
  type AddressList,
  type AttachmentInfo,
  type ParsedMessage,
  parseMessage,
} from './message-parser.ts';
export { sanitizeEmailHtml } from './sanitize-email-html.ts';
export { traceHeader } from './trace-header.ts';
