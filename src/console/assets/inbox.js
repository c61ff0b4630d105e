import { get, withQuery } from './api.js';
import { badge, field, formatDate, h, hashParams, hashWith, heading, replace } from './dom.js';
import { pager, refresher } from './widgets.js';

const PAGE_SIZE = 50;

/** The inbox as last shown, filters included, so leaving a message goes back to the same list. */
export let inboxHash = '#/inbox';

/** The inbox's filters as the location hash holds them. */
function readFilters() {
  const params = hashParams();
  return {
    search: params.get('search') ?? '',
    domain: params.get('domain') ?? '',
    address: params.get('address') ?? '',
    read: params.get('read') ?? '',
    archived: params.get('archived') === '1',
    failed: params.get('failed') === '1',
    offset: Number(params.get('offset') ?? 0) || 0,
  };
}

/**
 * The mail list query: the search box is passed through as the API's `search` (same operators), and the read filter
 * is the API's own `is:read` / `is:unread` operator added to it.
 */
function listPath(filters) {
  const search = [filters.search.trim(), filters.read ? `is:${filters.read}` : ''].filter(Boolean).join(' ');
  return withQuery('/api/v2/mail', {
    limit: PAGE_SIZE,
    offset: filters.offset,
    search,
    domain: filters.domain,
    emailAddress: filters.address,
    includeArchived: filters.archived ? 'true' : '',
    status: filters.failed ? 'failed' : '',
  });
}

function mailRow(email) {
  const sender = email.fromName ? `${email.fromName} <${email.from}>` : email.from;
  return h(
    'li',
    {},
    h(
      'a',
      {
        class: `mail-row${email.isRead ? '' : ' unread'}`,
        href: `#/mail/${encodeURIComponent(email.id)}`,
        'data-email-id': email.id,
      },
      h(
        'span',
        { class: 'mail-from' },
        email.isRead ? null : h('span', { class: 'visually-hidden' }, 'Unread: '),
        sender,
      ),
      h('span', { class: 'mail-subject' }, email.subject),
      h('span', { class: 'mail-preview' }, email.preview),
      h(
        'span',
        { class: 'mail-meta' },
        h('time', { datetime: email.receivedAt }, formatDate(email.receivedAt)),
        email.hasAttachments
          ? badge(null, `${email.attachmentCount} attachment${email.attachmentCount > 1 ? 's' : ''}`)
          : null,
        email.isArchived ? badge(null, 'archived') : null,
        email.parseSuccess ? null : badge(null, 'failed'),
      ),
    ),
  );
}

function filterForm(filters, domains) {
  const search = h('input', {
    type: 'search',
    name: 'search',
    value: filters.search,
    placeholder: 'from:ann subject:invoice has:attachment',
  });
  const domain = h(
    'select',
    { name: 'domain' },
    h('option', { value: '' }, 'All domains'),
    domains.map((name) => h('option', { value: name, selected: name === filters.domain }, name)),
  );
  const address = h('input', {
    type: 'text',
    name: 'address',
    value: filters.address,
    placeholder: 'hello@example.com',
  });
  const read = h(
    'select',
    { name: 'read' },
    h('option', { value: '' }, 'Read and unread'),
    h('option', { value: 'unread', selected: filters.read === 'unread' }, 'Unread only'),
    h('option', { value: 'read', selected: filters.read === 'read' }, 'Read only'),
  );
  const archived = h('input', { type: 'checkbox', name: 'archived', checked: filters.archived });
  const failed = h('input', { type: 'checkbox', name: 'failed', checked: filters.failed });
  const submit = () => {
    location.hash = hashWith('#/inbox', {
      search: search.value.trim(),
      domain: domain.value,
      address: address.value.trim(),
      read: read.value,
      archived: archived.checked ? '1' : '',
      failed: failed.checked ? '1' : '',
    });
  };
  for (const control of [domain, read, archived, failed]) control.addEventListener('change', submit);
  return h(
    'form',
    {
      role: 'search',
      class: 'filters',
      onsubmit: (event) => {
        event.preventDefault();
        submit();
      },
    },
    h(
      'div',
      { class: 'search-line' },
      field('Search', search, 'Operators: from: to: subject: has:attachment is:read before: after: and -negation'),
      h('button', { type: 'submit', class: 'primary' }, 'Search'),
    ),
    h(
      'div',
      { class: 'filter-line' },
      field('Domain', domain),
      field('Address', address),
      field('Read state', read),
      h('label', { class: 'check' }, archived, ' Include archived'),
      h('label', { class: 'check' }, failed, ' Failed to parse only'),
    ),
  );
}

/** A signature of what the list shows, so a refresh that changes nothing leaves the page (and focus) alone. */
function listSignature(answer) {
  return JSON.stringify([
    answer.pagination.total,
    answer.emails.map((email) => [email.id, email.isRead, email.isArchived]),
  ]);
}

/**
 * The list's first answer. The API refuses a query it cannot run (a bad date in the search, a negative offset) with
 * a 400: the view then keeps the filter form to correct it and shows the refusal beside it.
 */
async function firstAnswer(path) {
  try {
    return { answer: await get(path) };
  } catch (error) {
    if (error.status !== 400) throw error;
    const domains = (await get('/api/v2/mail?limit=1')).filters.uniqueDomains;
    return { refusal: error.message, domains };
  }
}

/** What an empty list says: no match for the filters, or, with no mail received at all, where mail comes from. */
function emptyList(answer) {
  if ((answer.filters?.uniqueDomains ?? []).length > 0) return h('li', { class: 'empty' }, 'No mail matches.');
  return h(
    'li',
    { class: 'empty' },
    'No mail yet. Mail sent to an active address shows here as it arrives: ',
    h('a', { href: '#/setup' }, 'set up a domain and an address'),
    ', or try the sandbox (npx mailroom dev), which has one ready.',
  );
}

export async function showInbox(container) {
  inboxHash = location.hash;
  const filters = readFilters();
  const path = listPath(filters);
  const first = await firstAnswer(path);
  if (first.refusal) {
    replace(
      container,
      heading('Inbox'),
      filterForm(filters, first.domains),
      h('p', { class: 'form-error', role: 'alert' }, first.refusal),
    );
    return null;
  }
  let answer = first.answer;
  const list = h('ul', { class: 'mail-list', 'aria-label': 'Messages' });
  const footer = h('div', {});
  const render = () => {
    // A refresh rebuilds the rows: the keyboard stays on the row it was on, found again by its email id.
    const focusedId = list.contains(document.activeElement) ? document.activeElement.dataset.emailId : undefined;
    replace(list, answer.emails.length === 0 ? emptyList(answer) : answer.emails.map(mailRow));
    replace(footer, pager('#/inbox', { ...answer.pagination, count: answer.emails.length }));
    if (focusedId) list.querySelector(`[data-email-id="${CSS.escape(focusedId)}"]`)?.focus();
  };
  render();
  replace(container, heading('Inbox'), filterForm(filters, answer.filters?.uniqueDomains ?? []), list, footer);

  const refresh = refresher(async () => {
    const next = await get(path);
    if (listSignature(next) !== listSignature(answer)) {
      answer = next;
      render();
    }
  });
  return {
    poll: refresh,
    onEvent: (event) => {
      if (event.type === 'email.received') refresh();
    },
  };
}
