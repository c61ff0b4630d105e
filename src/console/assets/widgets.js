/**
 * The building blocks several views share: action buttons, one-line forms, tables, pagers, endpoint choices,
 * refreshes and keeping focus across them.
 */

import { act, h, hashParams } from './dom.js';

/** A button that runs `action` through `act`: disabled meanwhile, the API's error shown on failure. */
export function actionButton(label, action, attrs = {}) {
  const button = h('button', { type: 'button', class: 'small', ...attrs }, label);
  button.addEventListener('click', () => act(button, action));
  return button;
}

/**
 * A row's Delete button: asks `question` first, then runs `remove` (which deletes and redraws the list). The row is
 * gone then, so the keyboard goes to the Delete button of the row that took its place (the next, else the previous),
 * or to the list's heading, `headingId`, when it was the last.
 */
export function deleteButton(question, remove, { headingId, ...attrs }) {
  const button = actionButton(
    'Delete',
    async () => {
      if (!confirm(question)) return;
      const row = button.closest('tr');
      const rows = [...row.parentElement.children].filter((one) => one.querySelector('[data-delete]'));
      const at = rows.indexOf(row);
      const neighbour = (rows[at + 1] ?? rows[at - 1])?.querySelector('[data-delete]').dataset.focus;
      await remove();
      const next = neighbour && document.querySelector(`[data-focus="${CSS.escape(neighbour)}"]`);
      (next ?? document.getElementById(headingId))?.focus();
    },
    { class: 'small danger', 'data-delete': true, ...attrs },
  );
  return button;
}

/** A form laid out on one line; submitting it runs `onSubmit` instead of loading a page. */
export function inlineForm(onSubmit, ...children) {
  return h(
    'form',
    {
      class: 'inline-form',
      onsubmit: (event) => {
        event.preventDefault();
        onSubmit();
      },
    },
    ...children,
  );
}

/** A table in its scrolling wrapper, with a header row of column titles. */
export function table(titles, rows, attrs = {}) {
  return h(
    'div',
    { class: 'table-wrap' },
    h(
      'table',
      attrs,
      h(
        'thead',
        {},
        h(
          'tr',
          {},
          titles.map((title) => h('th', { scope: 'col' }, title)),
        ),
      ),
      h('tbody', {}, rows),
    ),
  );
}

/**
 * Previous and Next for a list read `limit` at a time from the API's `pagination`, moving `offset` in the hash of
 * `path`. A page past the end (an old link, a list that shrank) says so, and Previous goes to the last page.
 */
export function pager(path, { offset, limit, count, total, totalIsExact, hasMore }) {
  const go = (next) => {
    const params = hashParams();
    params.set('offset', String(next));
    location.hash = `${path}?${params}`;
  };
  const about = totalIsExact === false ? 'about ' : '';
  const pastEnd = count === 0 && offset > 0;
  const lastPage = Math.max(0, Math.ceil(total / limit) - 1) * limit;
  return h(
    'nav',
    { class: 'pager', 'aria-label': 'Pages' },
    h(
      'button',
      { type: 'button', disabled: offset === 0, onclick: () => go(pastEnd ? lastPage : Math.max(0, offset - limit)) },
      'Previous',
    ),
    h(
      'span',
      {},
      pastEnd
        ? `Past the last page: ${about}${total} in all`
        : `${count === 0 ? 0 : offset + 1}–${offset + count} of ${about}${total}`,
    ),
    h('button', { type: 'button', disabled: !hasMore, onclick: () => go(offset + limit) }, 'Next'),
  );
}

/** A choice of the account's endpoints, led by an empty choice that `emptyLabel` names. */
export function endpointSelect(endpoints, { name, selectedId, emptyLabel }) {
  return h(
    'select',
    { name },
    h('option', { value: '' }, emptyLabel),
    endpoints.map((one) => h('option', { value: one.id, selected: one.id === selectedId }, one.name)),
  );
}

/**
 * A background refresh that runs `task` unless a run is still going. A failed run keeps what is shown; the next event
 * or poll tries again.
 */
export function refresher(task) {
  let running = false;
  return async () => {
    if (running) return;
    running = true;
    try {
      await task();
    } catch {
      // Left as shown until the next event or poll.
    } finally {
      running = false;
    }
  };
}

/**
 * Follows which control in `container` has the keyboard, by its `data-focus` key. The returned function, called after
 * the container was rebuilt, gives focus back to the control with that key when it still exists and the keyboard was
 * not moved elsewhere meanwhile (a control that is disabled or removed drops focus to the body).
 */
export function focusKeeper(container) {
  let key;
  container.addEventListener('focusin', (event) => {
    key = event.target.closest('[data-focus]')?.dataset.focus;
  });
  container.addEventListener('focusout', (event) => {
    if (event.relatedTarget && !container.contains(event.relatedTarget)) key = undefined;
  });
  return () => {
    const active = document.activeElement;
    if (!key || (active && active !== document.body && !container.contains(active))) return;
    container.querySelector(`[data-focus="${CSS.escape(key)}"]`)?.focus();
  };
}
