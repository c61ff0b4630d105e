import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
let sanitizer: typeof import('sanitize-html') | undefined;
/** Loaded at a thread's first call: the threads that never sanitize (ingest's writer) reach it through indexes. */
const sanitizeHtml = (): typeof import('sanitize-html') => (sanitizer ??= require('sanitize-html'));

/**
 * Start tags sanitized at most. htmlparser2 keeps the open elements in an array it adds to at the front, so a tag
 * opened inside many others costs as many steps. The bound holds any real message's markup and keeps the worst case
 * short (see docs/internals.md, Reading mail); the HTML after it is left out.
 */
const MAX_START_TAGS = 20_000;

/** `html` up to its MAX_START_TAGS + 1st start tag; every `<` and an ASCII letter counts, so no markup can hide one. */
function withinStartTags(html: string): string {
  let count = 0;
  for (let at = html.indexOf('<'); at !== -1; at = html.indexOf('<', at + 1)) {
    // Setting bit 0x20 lower-cases an ASCII letter and moves no other character into a-z.
    const next = html.charCodeAt(at + 1) | 0x20;
    if (next >= 0x61 && next <= 0x7a && ++count > MAX_START_TAGS) return html.slice(0, at);
  }
  return html;
}

/**
 * The one sanitizer for received HTML, used by the mail API and the webhook body alike: scripts, event handlers
 * and javascript: URLs go; ordinary markup, inline styles and images (including cid: and data: ones) stay.
 */
export function sanitizeEmailHtml(html: string | null): string {
  if (!html) return '';
  const sanitize = sanitizeHtml();
  return sanitize(withinStartTags(html), {
    allowedTags: [...sanitize.defaults.allowedTags, 'img', 'center', 'font'],
    allowedAttributes: {
      ...sanitize.defaults.allowedAttributes,
      '*': ['style', 'align', 'width', 'height', 'bgcolor', 'color', 'dir'],
      img: ['src', 'alt', 'title', 'width', 'height'],
      font: ['face', 'size', 'color'],
    },
    allowedSchemesByTag: { img: ['http', 'https', 'cid', 'data'] },
  });
}
