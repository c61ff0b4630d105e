import { download, get, getBlob, getText, patch } from './api.js';
import { act, badge, formatBytes, formatDate, h, heading, notify, replace } from './dom.js';
import { inboxHash } from './inbox.js';

/**
 * Until the reader asks, a message may show only its own images (data: URLs, its inline attachments among them) and its
 * own styles: no tracking pixels, no fetches.
 */
const BLOCKED_POLICY = "default-src 'none'; img-src data:; style-src 'unsafe-inline'";
const REMOTE_POLICY = "default-src 'none'; img-src * data:; style-src 'unsafe-inline'";

/**
 * Whether the HTML names a remote image, what the reader's choice would load. A link is not one: it is fetched only
 * when followed, and stays a link whatever the choice.
 */
function hasRemoteContent(html) {
  return /(src|background)\s*=\s*["']?\s*(https?:)?\/\//i.test(html) || /url\(\s*["']?\s*(https?:)?\/\//i.test(html);
}

const CID_URL = /cid:([^"'\s)]+)/gi;

/** The Content-ID a `cid:` URL names: percent-decoded (RFC 2392), compared without the header's angle brackets. */
function contentId(text) {
  try {
    return decodeURIComponent(text).replace(/^<|>$/g, '');
  } catch {
    return text;
  }
}

function dataUrl(blob) {
  return new Promise((resolve, reject) => {
    const reader = new FileReader();
    reader.addEventListener('load', () => resolve(reader.result));
    reader.addEventListener('error', () => reject(reader.error));
    reader.readAsDataURL(blob);
  });
}

/**
 * data: URLs for the attachments the HTML names by `cid:`, by Content-ID. The frame can resolve neither `cid:` nor the
 * API's downloads (they need the key), so the bytes are fetched here; not as blob: URLs, which Chromium refuses to an
 * opaque-origin frame ("Not allowed to load local resource"). One that fails to load stays a broken image.
 */
async function inlineImages(email, html) {
  const wanted = new Set([...html.matchAll(CID_URL)].map((match) => contentId(match[1])));
  const parts = new Map();
  (email.content?.attachments ?? email.attachments ?? []).forEach((file, index) => {
    const id = contentId(file.contentId ?? '');
    if (id && wanted.has(id) && !parts.has(id)) parts.set(id, index);
  });
  const urls = new Map();
  await Promise.all(
    [...parts].map(async ([id, index]) => {
      try {
        const blob = await getBlob(`/api/v2/attachments/${encodeURIComponent(email.id)}/parts/${index}`);
        urls.set(id, await dataUrl(blob));
      } catch {
        // Shown as a broken image, as a mail client shows a missing part.
      }
    }),
  );
  return urls;
}

/**
 * Prepares the HTML, as the sender wrote it, for its frame. `cid:` images and CSS urls become their data: URLs. What
 * would act rather than show goes: scripts (the frame would not run them), `<meta>` and `<base>`, which could reload
 * the frame elsewhere or point its links and images at another site, and a relative link's href. Every other link
 * opens a new tab (the frame itself may not navigate), with `noopener noreferrer`: the page it opens gets no
 * `window.opener` to steer the console's tab with, and no referrer. DOMParser's document runs and loads nothing.
 */
function framed(html, images) {
  const parsed = new DOMParser().parseFromString(html, 'text/html');
  const resolve = (text) => text.replace(CID_URL, (url, id) => images.get(contentId(id)) ?? url);
  for (const element of parsed.querySelectorAll('script, meta, base')) element.remove();
  for (const image of parsed.querySelectorAll('img[src]'))
    image.setAttribute('src', resolve(image.getAttribute('src')));
  for (const styled of parsed.querySelectorAll('[style]'))
    styled.setAttribute('style', resolve(styled.getAttribute('style')));
  for (const sheet of parsed.querySelectorAll('style')) sheet.textContent = resolve(sheet.textContent);
  for (const link of parsed.querySelectorAll('a[href], area[href]')) {
    // A relative link has nothing to be relative to in a message; in the frame it would open a page of the console.
    const href = link.getAttribute('href').trim();
    if (!href.startsWith('//') && !URL.canParse(href)) {
      link.removeAttribute('href');
      continue;
    }
    link.setAttribute('target', '_blank');
    link.setAttribute('rel', 'noopener noreferrer');
  }
  return parsed.head.innerHTML + parsed.body.innerHTML;
}

function srcdoc(html, images, policy) {
  return `<!doctype html><html><head><meta charset="utf-8"><meta http-equiv="Content-Security-Policy" content="${policy}"></head><body>${framed(html, images)}</body></html>`;
}

/**
 * The HTML body in a sandboxed iframe: no scripts, no forms, no navigation of itself or the console, an origin of its
 * own. It may open popups (its links), which leave the sandbox so the linked sites work as in any other tab.
 */
function htmlBody(html, images) {
  const frame = h('iframe', {
    sandbox: 'allow-popups allow-popups-to-escape-sandbox',
    title: 'HTML body',
    class: 'html-body',
    referrerpolicy: 'no-referrer',
  });
  frame.srcdoc = srcdoc(html, images, BLOCKED_POLICY);
  if (!hasRemoteContent(html)) return h('section', { 'aria-label': 'HTML body' }, frame);
  const note = h('p', { class: 'remote-note', tabindex: '-1' }, 'Remote content is blocked. ');
  const load = h(
    'button',
    {
      type: 'button',
      onclick: () => {
        frame.srcdoc = srcdoc(html, images, REMOTE_POLICY);
        // The button goes with the note's old text: the keyboard stays on the note rather than drop to the page's top.
        const hadFocus = document.activeElement === load;
        replace(note, 'Remote content is loaded.');
        if (hadFocus) note.focus();
      },
    },
    'Load remote content',
  );
  note.append(load);
  return h('section', { 'aria-label': 'HTML body' }, note, frame);
}

function verdicts(security) {
  const names = [
    ['SPF', security.spf],
    ['DKIM', security.dkim],
    ['DMARC', security.dmarc],
    ['Spam', security.spam],
  ];
  return h(
    'p',
    { class: 'verdicts', 'aria-label': 'Verdicts' },
    names.map(([name, value]) => badge(name, value)),
  );
}

function addressLine(label, value) {
  if (!value) return null;
  return [h('dt', {}, label), h('dd', {}, value)];
}

/** Bidirectional formatting characters: in a filename they only serve to disguise it ("invoice\u202Efdp.exe"). */
const BIDI_CONTROLS = /[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;

function attachments(email) {
  const files = email.content?.attachments ?? email.attachments ?? [];
  if (files.length === 0) return null;
  return h(
    'section',
    { class: 'attachments' },
    h('h2', {}, 'Attachments'),
    h(
      'ul',
      {},
      files.map((file, index) => {
        // A part without a filename gets the name its download has from the API.
        const filename = file.filename || `attachment-${index + 1}`;
        // Shown as stored, with a replacement character for each formatting one, so that it reads as it is.
        const shown = filename.replace(BIDI_CONTROLS, '\ufffd');
        const button = h(
          'button',
          {
            type: 'button',
            onclick: () =>
              act(button, () =>
                download(`/api/v2/attachments/${encodeURIComponent(email.id)}/parts/${index}`, filename),
              ),
          },
          `Download ${shown}`,
        );
        return h('li', {}, button, ' ', h('span', { class: 'hint' }, `${file.contentType}, ${formatBytes(file.size)}`));
      }),
    ),
  );
}

function headersTable(headers) {
  const rows = Object.entries(headers ?? {}).flatMap(([name, value]) =>
    (Array.isArray(value) ? value : [value]).map((one) =>
      h('tr', {}, h('th', { scope: 'row' }, name), h('td', {}, one)),
    ),
  );
  return h('table', { class: 'headers' }, h('tbody', {}, rows));
}

/** A collapsible part that loads its content the first time it is opened. */
function lazyDetails(summary, load) {
  const body = h('div', {}, h('p', { class: 'loading' }, 'Loading…'));
  const details = h('details', {}, h('summary', {}, summary), body);
  let loaded = false;
  details.addEventListener('toggle', async () => {
    if (!details.open || loaded) return;
    loaded = true;
    try {
      replace(body, await load());
    } catch (error) {
      replace(body, h('p', { class: 'form-error', role: 'alert' }, error.message));
    }
  });
  return details;
}

async function threadList(email) {
  const thread = await get(`/api/v2/mail/${encodeURIComponent(email.id)}/thread`);
  return h(
    'ol',
    { class: 'thread' },
    thread.messages.map((message) =>
      h(
        'li',
        {},
        message.id === email.id
          ? h('strong', { 'aria-current': 'true' }, `${message.subject} — ${message.from} (this message)`)
          : h('a', { href: `#/mail/${encodeURIComponent(message.id)}` }, `${message.subject} — ${message.from}`),
        ' ',
        h('time', { datetime: message.receivedAt }, formatDate(message.receivedAt)),
      ),
    ),
  );
}

/**
 * Read and archive buttons that relabel themselves: the rest of the view stays as the reader left it (remote content
 * they chose to load, the parts they opened, where they scrolled).
 */
function toolbar(email) {
  const read = h('button', { type: 'button' }, email.isRead ? 'Mark unread' : 'Mark read');
  read.addEventListener('click', () =>
    act(read, async () => {
      await patch(`/api/v2/mail/${encodeURIComponent(email.id)}`, { isRead: !email.isRead });
      email.isRead = !email.isRead;
      notify(email.isRead ? 'Marked read' : 'Marked unread');
      read.textContent = email.isRead ? 'Mark unread' : 'Mark read';
    }),
  );
  const archive = h('button', { type: 'button' }, email.isArchived ? 'Unarchive' : 'Archive');
  archive.addEventListener('click', () =>
    act(archive, async () => {
      const archived = Boolean(email.isArchived);
      await patch(`/api/v2/mail/${encodeURIComponent(email.id)}`, { isArchived: !archived });
      email.isArchived = !archived;
      notify(archived ? 'Moved back to the inbox' : 'Archived');
      archive.textContent = email.isArchived ? 'Unarchive' : 'Archive';
    }),
  );
  return h(
    'div',
    { class: 'toolbar' },
    h('a', { class: 'button', href: inboxHash }, 'Back to inbox'),
    read,
    archive,
    h('a', { class: 'button', href: `#/deliveries?emailId=${encodeURIComponent(email.id)}` }, 'Deliveries'),
  );
}

/**
 * The HTML body as the sender wrote it, style sheets and all, which the frame isolates; the API's sanitized one, which
 * leaves out `<style>`, should that fail to load.
 */
async function originalHtml(email) {
  const sanitized = email.content?.htmlBody || null;
  if (!sanitized) return null;
  try {
    return (await get(`/api/v2/mail/${encodeURIComponent(email.id)}/html`)).html ?? sanitized;
  } catch {
    return sanitized;
  }
}

export async function showMessage(container, id) {
  const email = await get(`/api/v2/mail/${encodeURIComponent(id)}`);
  const html = await originalHtml(email);
  const images = await inlineImages(email, html ?? '');
  const content = email.content ?? {};
  replace(
    container,
    heading(email.subject || 'No Subject'),
    toolbar(email),
    h(
      'dl',
      { class: 'addresses' },
      addressLine('From', email.fromName ? `${email.fromName} <${email.from}>` : email.from),
      addressLine('To', email.to),
      addressLine('Cc', email.cc),
      addressLine('Reply-To', email.replyTo),
      addressLine('Received', formatDate(email.receivedAt)),
    ),
    verdicts(email.security ?? {}),
    email.metadata?.parseSuccess === false
      ? h('p', { class: 'form-error' }, `Parsing failed: ${email.metadata.parseError}`)
      : null,
    html ? htmlBody(html, images) : null,
    h(
      'details',
      { open: !html },
      h('summary', {}, 'Text body'),
      h('pre', { class: 'text-body' }, content.textBody || '(no text body)'),
    ),
    attachments(email),
    h('details', {}, h('summary', {}, 'Headers'), headersTable(content.headers)),
    lazyDetails('Raw source', async () =>
      h('pre', { class: 'raw' }, await getText(`/api/v2/mail/${encodeURIComponent(email.id)}/raw`)),
    ),
    lazyDetails('Thread', () => threadList(email)),
  );
  // Escape leaves the message, unless it is meant for something inside it: on a <details> summary (Headers, Raw
  // source) it closes that part and the reader stays.
  const onKey = (event) => {
    if (event.key !== 'Escape' || event.defaultPrevented) return;
    if (event.target instanceof HTMLInputElement || event.target instanceof HTMLTextAreaElement) return;
    const summary = event.target instanceof Element ? event.target.closest('summary') : null;
    if (summary) {
      summary.parentElement.open = false;
      return;
    }
    location.hash = inboxHash;
  };
  document.addEventListener('keydown', onKey);
  return { dispose: () => document.removeEventListener('keydown', onKey) };
}
