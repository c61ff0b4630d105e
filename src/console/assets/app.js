import { forgetKey, onUnauthorized, request, storedKey, storeKey } from './api.js';
import { showDeliveries, showDelivery } from './deliveries.js';
import { field, h, heading, replace } from './dom.js';
import { showInbox } from './inbox.js';
import { startLive } from './live.js';
import { showMessage } from './message.js';
import { showDomain, showSetup } from './setup.js';

const main = document.getElementById('main');
const topbar = document.getElementById('topbar');
const liveState = document.getElementById('live-state');

/** Hash routes: each view renders into the container it is given and may return `{ onEvent, poll, dispose }`. */
const ROUTES = [
  [/^#\/mail\/([^/?]+)/, showMessage],
  [/^#\/setup\/domains\/([^/?]+)/, showDomain],
  [/^#\/setup/, showSetup],
  [/^#\/deliveries\/([^/?]+)/, showDelivery],
  [/^#\/deliveries/, showDeliveries],
  [/^#\/inbox/, showInbox],
];

let currentView = null;
let stopLive = null;
/** Counts navigations: a view that finishes loading after a later navigation began is dropped unseen. */
let navigation = 0;

const LIVE_LABELS = {
  connecting: 'Connecting…',
  live: 'Live',
  polling: 'Refreshing every second',
  reconnecting: 'Reconnecting…',
};

/** What the live state says: while no stream is open, that the view is not updating, why, and when it tries again. */
function liveLabel(state, detail) {
  if (!detail) return LIVE_LABELS[state];
  return `Not live: ${detail.reason}. Retrying in ${Math.ceil(detail.retryInMs / 1000)} s`;
}

function signIn(message) {
  navigation++;
  stopLive?.();
  stopLive = null;
  currentView?.dispose?.();
  currentView = null;
  topbar.hidden = true;
  const input = h('input', {
    type: 'password',
    name: 'apiKey',
    autocomplete: 'off',
    required: true,
    spellcheck: 'false',
  });
  const error = h('p', { class: 'form-error', role: 'alert', id: 'sign-in-error' }, message ?? '');
  const submit = h('button', { type: 'submit', class: 'primary' }, 'Sign in');
  const form = h(
    'form',
    {
      class: 'sign-in card',
      'aria-describedby': 'sign-in-error',
      onsubmit: async (event) => {
        event.preventDefault();
        const key = input.value.trim();
        // A browser cannot send such a key in a header at all, so it would never reach the API to be refused.
        if (/[^\x21-\x7e]/.test(key)) {
          error.textContent = 'An API key has no spaces or non-ASCII characters: check what was pasted.';
          input.focus();
          return;
        }
        submit.disabled = true;
        error.textContent = '';
        try {
          await request('GET', '/api/v2/mail?limit=1', undefined, key);
          storeKey(key);
          start();
        } catch (failure) {
          error.textContent = failure.message;
          input.focus();
        } finally {
          submit.disabled = false;
        }
      },
    },
    heading('Sign in to Mailroom'),
    h('p', {}, 'Use an API key. It stays in this browser tab only and is sent to the API as a bearer token.'),
    field('API key', input),
    error,
    submit,
  );
  replace(main, form);
  input.focus();
}

function start() {
  topbar.hidden = false;
  stopLive?.();
  stopLive = startLive({
    onEvent: (event) => currentView?.onEvent?.(event),
    onPoll: () => currentView?.poll?.(),
    onState: (state, detail) => {
      liveState.textContent = liveLabel(state, detail);
      liveState.dataset.state = state;
    },
  });
  if (!location.hash || location.hash === '#') location.hash = '#/inbox';
  else route();
}

async function route() {
  if (!storedKey()) return signIn();
  const hash = location.hash || '#/inbox';
  const match = ROUTES.find(([pattern]) => pattern.test(hash));
  if (!match) {
    location.hash = '#/inbox';
    return;
  }
  const [pattern, show] = match;
  currentView?.dispose?.();
  currentView = null;
  const section = hash.split(/[/?]/)[1];
  for (const link of topbar.querySelectorAll('nav a')) {
    const current = link.dataset.section === (section === 'mail' ? 'inbox' : section);
    if (current) link.setAttribute('aria-current', 'page');
    else link.removeAttribute('aria-current');
  }
  const current = ++navigation;
  replace(main, h('p', { class: 'loading' }, 'Loading…'));
  // Each view renders into its own container, shown only if no navigation came after: the last navigation wins.
  const container = h('div', {});
  try {
    const view = await show(container, ...hash.match(pattern).slice(1).map(decodeURIComponent));
    if (current !== navigation) {
      view?.dispose?.();
      return;
    }
    currentView = view ?? null;
    replace(main, container);
  } catch (error) {
    if (current !== navigation || error.status === 401) return;
    replace(main, heading('Something went wrong'), h('p', { class: 'form-error', role: 'alert' }, error.message));
  }
  main.querySelector('.view-title')?.focus();
}

// The key worked at sign-in, so a 401 now means it was revoked (or its account removed): say so, with the API's reason.
onUnauthorized((error) => {
  forgetKey();
  signIn(`This API key is no longer valid (${error.body?.detail ?? error.message}). Sign in with another key.`);
});
document.getElementById('sign-out').addEventListener('click', () => {
  forgetKey();
  location.hash = '';
  signIn();
});
window.addEventListener('hashchange', route);

if (storedKey()) start();
else signIn();
