import { get, withQuery } from './api.js';
import { badge, field, formatDate, h, hashParams, hashWith, heading, replace } from './dom.js';
import { refresher } from './widgets.js';

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
      { class: `mail-row${email.isRead ? '' : ' unread'}`, href: `#/mail/${encodeURIComponent(email.id)}` },
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

function pager(filters, pagination) {
  const first = pagination.total === 0 ? 0 : filters.offset + 1;
  const last = filters.offset + pagination.count;
  const go = (offset) => {
    const params = hashParams();
    params.set('offset', String(offset));
    location.hash = `#/inbox?${params}`;
  };
  return h(
    'nav',
    { class: 'pager', 'aria-label': 'Pages' },
    h(
      'button',
      { type: 'button', disabled: filters.offset === 0, onclick: () => go(Math.max(0, filters.offset - PAGE_SIZE)) },
      'Previous',
    ),
    h('span', {}, `${first}–${last} of ${pagination.totalIsExact === false ? 'about ' : ''}${pagination.total}`),
    h(
      'button',
      { type: 'button', disabled: !pagination.hasMore, onclick: () => go(filters.offset + PAGE_SIZE) },
      'Next',
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

export async function showInbox(main) {
  inboxHash = location.hash;
  const filters = readFilters();
  const path = listPath(filters);
  let answer = await get(path);
  const list = h('ul', { class: 'mail-list', 'aria-label': 'Messages' });
  const footer = h('div', {});
  const render = () => {
    replace(
      list,
      answer.emails.length === 0 ? h('li', { class: 'empty' }, 'No mail matches.') : answer.emails.map(mailRow),
    );
    replace(footer, pager(filters, { ...answer.pagination, count: answer.emails.length }));
  };
  render();
  replace(main, heading('Inbox'), filterForm(filters, answer.filters?.uniqueDomains ?? []), list, footer);

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
