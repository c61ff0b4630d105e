import { sanitizeEmailHtml } from '../mime/index.ts';
import { serveRequests } from '../workers/index.ts';

/** The thread of an HtmlCleaner: sanitizes the long HTML bodies it is handed. */
serveRequests(async ({ html }: { html: string }) => sanitizeEmailHtml(html));
