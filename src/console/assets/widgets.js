/** The building blocks several views share: action buttons, one-line forms, tables, endpoint choices, refreshes. */

import { act, h } from './dom.js';

/** A button that runs `action` through `act`: disabled meanwhile, the API's error shown on failure. */
export function actionButton(label, action, attrs = {}) {
  const button = h('button', { type: 'button', class: 'small', ...attrs }, label);
  button.addEventListener('click', () => act(button, action));
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
