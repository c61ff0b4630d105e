import { del, post, put } from './api.js';
import { act, badge, field, formatDate, h, notify } from './dom.js';
import { actionButton, deleteButton, endpointSelect, inlineForm, table } from './widgets.js';

/** What an endpoint sends to, as one editable line per type. */
const TARGETS = {
  webhook: { label: 'Webhook URL', read: (config) => config.url ?? '', write: (value) => ({ url: value }) },
  email: { label: 'Forward to', read: (config) => config.forwardTo ?? '', write: (value) => ({ forwardTo: value }) },
  email_group: {
    label: 'Forward to (comma-separated)',
    read: (config) => (config.emails ?? []).join(', '),
    write: (value) => ({
      emails: value
        .split(',')
        .map((one) => one.trim())
        .filter(Boolean),
    }),
  },
};

/** An endpoint's config as it may be sent back: the verification token is the server's, not a setting. */
function editableConfig(endpoint) {
  if (!endpoint) return {};
  const { verificationToken: _token, ...config } = endpoint.config ?? {};
  return config;
}

/** A Standard Webhooks secret: `whsec_` and 24 random bytes in base64. */
function newSigningSecret() {
  const bytes = crypto.getRandomValues(new Uint8Array(24));
  return `whsec_${btoa(String.fromCharCode(...bytes))}`;
}

/** The webhook's signing secret, with a button that makes one; shown for webhooks only. */
function secretField(endpoint, type) {
  const secret = h('input', {
    type: 'text',
    name: 'secret',
    autocomplete: 'off',
    spellcheck: 'false',
    value: endpoint?.config?.secret ?? '',
  });
  const generate = h('button', { type: 'button', class: 'small' }, 'Generate');
  generate.addEventListener('click', () => {
    secret.value = newSigningSecret();
    secret.focus();
  });
  const wrapper = field(
    'Signing secret',
    secret,
    'Set: each webhook carries a Standard Webhooks signature (webhook-signature) made with it. Empty: unsigned.',
  );
  secret.after(' ', generate);
  const showFor = (chosen) => {
    wrapper.hidden = chosen !== 'webhook';
  };
  showFor(type.value);
  type.addEventListener('change', () => showFor(type.value));
  return { wrapper, value: () => secret.value.trim() };
}

function successRate(stats) {
  if (!stats || stats.total === 0) return 'no deliveries yet';
  return `${Math.round((stats.successful / stats.total) * 100)}% of ${stats.total} delivered`;
}

function endpointForm({ endpoint, onDone }) {
  const name = h('input', { type: 'text', name: 'name', required: true, value: endpoint?.name ?? '' });
  const type = h(
    'select',
    { name: 'type', disabled: Boolean(endpoint) },
    Object.keys(TARGETS).map((one) => h('option', { value: one, selected: one === endpoint?.type }, one)),
  );
  const target = h('input', {
    type: 'text',
    name: 'target',
    required: true,
    value: endpoint ? TARGETS[endpoint.type].read(endpoint.config) : '',
  });
  const targetField = field(TARGETS[type.value].label, target);
  type.addEventListener('change', () => {
    targetField.querySelector('label').textContent = TARGETS[type.value].label;
  });
  const secret = secretField(endpoint, type);
  const description = h('input', { type: 'text', name: 'description', value: endpoint?.description ?? '' });
  const submit = h(
    'button',
    { type: 'submit', class: 'primary', 'data-focus': endpoint ? undefined : 'endpoint-create' },
    endpoint ? 'Save endpoint' : 'Create endpoint',
  );
  const form = inlineForm(
    () =>
      act(submit, async () => {
        const { secret: _previous, ...kept } = editableConfig(endpoint);
        const config = { ...kept, ...TARGETS[type.value].write(target.value.trim()) };
        if (type.value === 'webhook' && secret.value()) config.secret = secret.value();
        const body = { name: name.value.trim(), description: description.value.trim() || null, config };
        if (endpoint) await put(`/api/v2/endpoints/${encodeURIComponent(endpoint.id)}`, body);
        else await post('/api/v2/endpoints', { ...body, type: type.value, description: body.description ?? undefined });
        notify(endpoint ? `Saved ${body.name}` : `Created ${body.name}`);
        onDone();
      }),
    field('Endpoint name', name),
    field('Type', type),
    targetField,
    secret.wrapper,
    field('Description', description),
    submit,
  );
  // Saving an edit closes its row: the keyboard goes back from any of its fields to the endpoint's Edit button.
  if (endpoint) form.dataset.focus = `endpoint-edit:${endpoint.id}`;
  return form;
}

function endpointRow(endpoint, refresh) {
  const row = h('tr', {});
  const toggle = actionButton(
    endpoint.isActive ? 'Deactivate' : 'Activate',
    async () => {
      await put(`/api/v2/endpoints/${encodeURIComponent(endpoint.id)}`, { isActive: !endpoint.isActive });
      notify(`${endpoint.name} ${endpoint.isActive ? 'deactivated' : 'activated'}`);
      refresh();
    },
    { 'data-focus': `endpoint-toggle:${endpoint.id}` },
  );
  const test = actionButton('Test', async () => {
    const result = await post(`/api/v2/endpoints/${encodeURIComponent(endpoint.id)}/test`);
    const detail = result.statusCode ? ` (HTTP ${result.statusCode}, ${result.responseTime} ms)` : '';
    notify(`${result.message}${detail}`, { error: !result.success });
  });
  const remove = deleteButton(
    `Delete the endpoint ${endpoint.name}? Addresses routed to it will only store their mail, and catch-all is ` +
      'switched off on domains that use it.',
    async () => {
      await del(`/api/v2/endpoints/${encodeURIComponent(endpoint.id)}`);
      notify(`Deleted ${endpoint.name}`);
      await refresh();
    },
    { headingId: 'endpoints-title', 'data-focus': `endpoint-delete:${endpoint.id}` },
  );
  const edit = h(
    'button',
    { type: 'button', class: 'small', 'aria-expanded': 'false', 'data-focus': `endpoint-edit:${endpoint.id}` },
    'Edit',
  );
  edit.addEventListener('click', () => {
    const next = row.nextElementSibling;
    if (next?.classList.contains('edit-row')) {
      next.remove();
      edit.setAttribute('aria-expanded', 'false');
      return;
    }
    const form = endpointForm({ endpoint, onDone: refresh });
    row.after(h('tr', { class: 'edit-row' }, h('td', { colspan: '5' }, form)));
    edit.setAttribute('aria-expanded', 'true');
    form.querySelector('input')?.focus();
  });
  row.append(
    h('th', { scope: 'row' }, endpoint.name, h('br'), h('small', { class: 'hint' }, endpoint.type)),
    h('td', { class: 'target' }, TARGETS[endpoint.type]?.read(endpoint.config ?? {}) ?? ''),
    h('td', {}, badge(null, endpoint.isActive ? 'active' : 'inactive')),
    h(
      'td',
      {},
      successRate(endpoint.deliveryStats),
      h('br'),
      h('small', { class: 'hint' }, `last delivery ${formatDate(endpoint.deliveryStats?.lastDelivery)}`),
    ),
    h(
      'td',
      {},
      h(
        'div',
        { class: 'actions' },
        edit,
        toggle,
        test,
        h(
          'a',
          { class: 'button small', href: `#/deliveries?endpointId=${encodeURIComponent(endpoint.id)}` },
          'Deliveries',
        ),
        remove,
      ),
    ),
  );
  return row;
}

export function endpointsSection(endpoints, refresh) {
  return h(
    'section',
    { 'aria-labelledby': 'endpoints-title' },
    h('h2', { id: 'endpoints-title', tabindex: '-1' }, 'Endpoints'),
    endpointForm({ onDone: refresh }),
    endpoints.length === 0
      ? h('p', {}, 'No endpoints yet.')
      : table(
          ['Endpoint', 'Sends to', 'State', 'Health', 'Actions'],
          endpoints.map((endpoint) => endpointRow(endpoint, refresh)),
        ),
  );
}

const NO_ROUTING = 'No routing (store only)';

function addressRow(address, endpoints, refresh) {
  const routing = endpointSelect(endpoints, {
    name: 'routing',
    selectedId: address.endpointId,
    emptyLabel: NO_ROUTING,
  });
  routing.setAttribute('aria-label', `Endpoint for ${address.address}`);
  routing.dataset.focus = `address-routing:${address.id}`;
  const save = actionButton(
    'Save routing',
    async () => {
      await put(`/api/v2/email-addresses/${encodeURIComponent(address.id)}`, { endpointId: routing.value || null });
      notify(`Routing of ${address.address} saved`);
      refresh();
    },
    { 'data-focus': `address-save:${address.id}` },
  );
  const toggle = actionButton(
    address.isActive ? 'Deactivate' : 'Activate',
    async () => {
      await put(`/api/v2/email-addresses/${encodeURIComponent(address.id)}`, { isActive: !address.isActive });
      notify(`${address.address} ${address.isActive ? 'deactivated' : 'activated'}`);
      refresh();
    },
    { 'data-focus': `address-toggle:${address.id}` },
  );
  const remove = deleteButton(
    `Delete the address ${address.address}?`,
    async () => {
      await del(`/api/v2/email-addresses/${encodeURIComponent(address.id)}`);
      notify(`Deleted ${address.address}`);
      await refresh();
    },
    { headingId: 'addresses-title', 'data-focus': `address-delete:${address.id}` },
  );
  return h(
    'tr',
    {},
    h('th', { scope: 'row' }, address.address),
    h('td', {}, badge(null, address.isActive ? 'active' : 'inactive'), ' ', badge('domain', address.domain?.status)),
    h('td', {}, h('div', { class: 'actions' }, routing, save)),
    h('td', {}, h('div', { class: 'actions' }, toggle, remove)),
  );
}

export function addressesSection(addresses, domains, endpoints, refresh) {
  const address = h('input', { type: 'email', name: 'address', required: true, placeholder: 'hello@example.com' });
  const domain = h(
    'select',
    { name: 'domainId', required: true },
    domains.map((one) => h('option', { value: one.id }, one.domain)),
  );
  // The domain follows what is typed after the @: the longest listed domain it is or is under.
  address.addEventListener('input', () => {
    const typed = address.value.trim().toLowerCase().split('@')[1] ?? '';
    const [match] = domains
      .filter((one) => typed === one.domain || typed.endsWith(`.${one.domain}`))
      .sort((a, b) => b.domain.length - a.domain.length);
    if (match) domain.value = match.id;
  });
  const endpoint = endpointSelect(endpoints, { name: 'endpointId', selectedId: '', emptyLabel: NO_ROUTING });
  const submit = h('button', { type: 'submit', class: 'primary', 'data-focus': 'address-create' }, 'Create address');
  const form = inlineForm(
    () =>
      act(submit, async () => {
        const created = await post('/api/v2/email-addresses', {
          address: address.value.trim(),
          domainId: domain.value,
          ...(endpoint.value ? { endpointId: endpoint.value } : {}),
        });
        notify(created.warning ? `Created ${created.address}: ${created.warning}` : `Created ${created.address}`);
        refresh();
      }),
    field('Address', address),
    field('Domain', domain),
    field('Endpoint', endpoint),
    submit,
  );
  return h(
    'section',
    { 'aria-labelledby': 'addresses-title' },
    h('h2', { id: 'addresses-title', tabindex: '-1' }, 'Addresses'),
    domains.length === 0 ? h('p', {}, 'Add a domain first.') : form,
    addresses.length === 0
      ? h('p', {}, 'No addresses yet.')
      : table(
          ['Address', 'State', 'Routing', 'Actions'],
          addresses.map((one) => addressRow(one, endpoints, refresh)),
        ),
  );
}
