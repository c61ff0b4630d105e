/** Small DOM helpers shared by every view: element building, notices, formatting. */

/**
 * Builds an element. `attrs` keys: `class`, `text`, `on<event>` handlers, booleans (set when true), anything else as
 * an attribute. Children are nodes, strings, or arrays of them; null and false are skipped.
 */
export function h(tag, attrs = {}, ...children) {
  const element = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (value === null || value === undefined || value === false) continue;
    if (name === 'class') element.className = value;
    else if (name === 'text') element.textContent = value;
    else if (name.startsWith('on') && typeof value === 'function') element.addEventListener(name.slice(2), value);
    else if (value === true) element.setAttribute(name, '');
    else element.setAttribute(name, String(value));
  }
  append(element, children);
  return element;
}

function append(element, children) {
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    if (Array.isArray(child)) append(element, child);
    else element.append(child instanceof Node ? child : String(child));
  }
}

/** Replaces everything inside `element`. */
export function replace(element, ...children) {
  element.replaceChildren();
  append(element, children);
  return element;
}

let noticeTimer;
/** Shows a short message in the live region at the bottom of the page. */
export function notify(message, { error = false } = {}) {
  const notice = document.getElementById('notice');
  notice.textContent = message;
  notice.classList.toggle('error', error);
  notice.classList.add('shown');
  clearTimeout(noticeTimer);
  noticeTimer = setTimeout(() => notice.classList.remove('shown'), 6000);
}

/** Runs an action for a button, disabling it meanwhile and reporting the API's error text on failure. */
export async function act(button, action) {
  // Disabling a button drops its focus to the body: it gets the keyboard back once it is enabled again.
  const focused = document.activeElement === button;
  button.disabled = true;
  try {
    return await action();
  } catch (error) {
    notify(error.message, { error: true });
  } finally {
    button.disabled = false;
    if (focused && button.isConnected && document.activeElement === document.body) button.focus();
  }
}

export function formatDate(iso) {
  if (!iso) return '—';
  const date = new Date(iso);
  return date.toLocaleString(undefined, { dateStyle: 'medium', timeStyle: 'short' });
}

export function formatBytes(size) {
  if (size < 1024) return `${size} B`;
  if (size < 1024 * 1024) return `${(size / 1024).toFixed(1)} KB`;
  return `${(size / 1024 / 1024).toFixed(1)} MB`;
}

/** A status word as a coloured badge: `good`, `bad` or `neutral` by what the word means. */
export function badge(label, value) {
  const word = String(value ?? 'none').toLowerCase();
  const tone = ['pass', 'verified', 'success', 'active', 'ham', 'clean'].includes(word)
    ? 'good'
    : ['fail', 'failed', 'softfail', 'spam', 'permerror', 'infected', 'inactive'].includes(word)
      ? 'bad'
      : 'neutral';
  return h('span', { class: `badge ${tone}` }, label ? `${label} ${String(value)}` : String(value));
}

/** A page heading that takes focus after navigation, so screen readers and keyboards start at the top. */
export function heading(text) {
  return h('h1', { tabindex: '-1', class: 'view-title' }, text);
}

/** A labelled form field; `control` is the input, select or textarea, which gets the id. */
export function field(labelText, control, hint) {
  const id = control.id || `f-${Math.random().toString(36).slice(2, 9)}`;
  control.id = id;
  return h(
    'div',
    { class: 'field' },
    h('label', { for: id }, labelText),
    control,
    hint ? h('small', { class: 'hint' }, hint) : null,
  );
}

/** Parameters after `?` in the location hash. */
export function hashParams() {
  const hash = location.hash;
  const at = hash.indexOf('?');
  return new URLSearchParams(at === -1 ? '' : hash.slice(at + 1));
}

/** A `#/path?query` with empty values left out. */
export function hashWith(path, params) {
  const query = new URLSearchParams();
  for (const [name, value] of Object.entries(params)) {
    if (value !== undefined && value !== null && value !== '' && value !== false) query.set(name, String(value));
  }
  const text = query.toString();
  return text ? `${path}?${text}` : path;
}

/** Copies text, falling back to a selection copy where the Clipboard API is unavailable (plain http). */
export async function copyText(text) {
  if (navigator.clipboard && window.isSecureContext) {
    await navigator.clipboard.writeText(text);
    return;
  }
  const area = h('textarea', { class: 'offscreen', readonly: true });
  area.value = text;
  document.body.append(area);
  area.select();
  document.execCommand('copy');
  area.remove();
}
