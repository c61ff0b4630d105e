import sanitizeHtml from 'sanitize-html';

/**
 * The one sanitizer for received HTML, used by the mail API and the webhook body alike: scripts, event handlers
 * and javascript: URLs go; ordinary markup, inline styles and images (including cid: and data: ones) stay.
 */
export function sanitizeEmailHtml(html: string | null): string {
  if (!html) return '';
  return sanitizeHtml(html, {
    allowedTags: [...sanitizeHtml.defaults.allowedTags, 'img', 'center', 'font'],
    allowedAttributes: {
      ...sanitizeHtml.defaults.allowedAttributes,
      '*': ['style', 'align', 'width', 'height', 'bgcolor', 'color', 'dir'],
      img: ['src', 'alt', 'title', 'width', 'height'],
      font: ['face', 'size', 'color'],
    },
    allowedSchemesByTag: { img: ['http', 'https', 'cid', 'data'] },
  });
}
