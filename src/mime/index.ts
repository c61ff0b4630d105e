export type { AttachmentWithContent, ExtractedAttachment } from './extract-attachment.ts';
export type { AddressList, AttachmentInfo, ParsedMessage } from './message-parser.ts';
export { attachmentsWithContent, extractAttachment, hashAttachments, parseMessage } from './parsing.ts';
export { sanitizeEmailHtml } from './sanitize-email-html.ts';
export { traceHeader } from './trace-header.ts';
