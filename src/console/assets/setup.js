import { del, get, getAll, post, put } from './api.js';
import { act, badge, copyText, field, formatDate, h, heading, notify, replace } from './dom.js';
import { addressesSection, endpointsSection } from './routing.js';
import { actionButton, deleteButton, endpointSelect, focusKeeper, inlineForm, table } from './widgets.js';

function copyButton(label, text) {
  return actionButton(
    'Copy',
    async () => {
      await copyText(text);
      notify(`Copied ${label}`);
    },
    { 'aria-label': `Copy ${label}` },
  );
}

const deleteQuestion = (domain) => `Delete the domain ${domain}? Its addresses and DNS records are deleted with it.`;

function domainsSection(domains, refresh) {
  const name = h('input', { type: 'text', name: 'domain', required: true, placeholder: 'mail.example.com' });
  const submit = h('button', { type: 'submit', class: 'primary' }, 'Add domain');
  const form = inlineForm(
    () =>
      act(submit, async () => {
        const created = await post('/api/v2/domains', { domain: name.value.trim() });
        notify(`Added ${created.domain}: publish its DNS records`);
        location.hash = `#/setup/domains/${encodeURIComponent(created.id)}`;
      }),
    field('Domain name', name),
    submit,
  );
  const rows = domains.map((domain) =>
    h(
      'tr',
      {},
      h('th', { scope: 'row' }, h('a', { href: `#/setup/domains/${encodeURIComponent(domain.id)}` }, domain.domain)),
      h('td', {}, badge(null, domain.status)),
      h('td', {}, `${domain.stats.activeEmailAddresses} / ${domain.stats.totalEmailAddresses}`),
      h('td', {}, domain.isCatchAllEnabled ? (domain.catchAllEndpoint?.name ?? 'on') : 'off'),
      h('td', {}, formatDate(domain.lastDnsCheck)),
      h(
        'td',
        {},
        deleteButton(
          deleteQuestion(domain.domain),
          async () => {
            await del(`/api/v2/domains/${encodeURIComponent(domain.id)}`);
            notify(`Deleted ${domain.domain}`);
            await refresh();
          },
          { headingId: 'domains-title', 'data-focus': `domain-delete:${domain.id}` },
        ),
      ),
    ),
  );
  return h(
    'section',
    { 'aria-labelledby': 'domains-title' },
    h('h2', { id: 'domains-title', tabindex: '-1' }, 'Domains'),
    form,
    domains.length === 0
      ? h('p', {}, 'No domains yet.')
      : table(['Domain', 'Status', 'Active addresses', 'Catch-all', 'Last check', 'Actions'], rows),
  );
}

export async function showSetup(container) {
  const restoreFocus = focusKeeper(container);
  const render = async () => {
    const [domains, endpoints, addresses] = await Promise.all([
      getAll('/api/v2/domains'),
      getAll('/api/v2/endpoints'),
      getAll('/api/v2/email-addresses'),
    ]);
    replace(
      container,
      heading('Setup'),
      domainsSection(domains, refresh),
      endpointsSection(endpoints, refresh),
      addressesSection(addresses, domains, endpoints, refresh),
    );
  };
  const refresh = async () => {
    await render();
    restoreFocus();
  };
  await render();
  return {
    onEvent: (event) => {
      if (event.type === 'domain.status_changed') refresh();
    },
  };
}

/**
 * A warning when the MX record names a host without a dot: the server's MX_HOST was left at the machine's short name,
 * which no one on the internet can resolve, so mail would never arrive.
 */
function shortMxWarning(domain) {
  const mx = domain.dnsRecords.find((record) => record.recordType === 'MX');
  const host = mx?.value.split(/\s+/).at(-1)?.replace(/\.$/, '');
  if (!host || host.includes('.')) return null;
  return h(
    'p',
    { class: 'form-error', role: 'alert' },
    `The MX record names "${host}", a short host name the internet cannot resolve: set MX_HOST to this server's `,
    'public DNS name, restart it, then Check now: the records follow it.',
  );
}

/** Per-record status: the check's answer when one was just run (it says why a record is wrong), else the stored one. */
function recordsTable(domain, check) {
  const checked = check?.dnsRecords ?? [];
  const rows = domain.dnsRecords.map((record) => {
    const result = checked.find(
      (one) => one.type === record.recordType && one.name === record.name && one.value === record.value,
    );
    const verified = result ? result.isVerified : record.isVerified;
    return h(
      'tr',
      {},
      h('td', {}, record.recordType),
      h('td', {}, h('code', {}, record.name), ' ', copyButton(`${record.recordType} name`, record.name)),
      h(
        'td',
        {},
        h('code', { class: 'record-value' }, record.value),
        ' ',
        copyButton(`${record.recordType} value`, record.value),
      ),
      h('td', {}, record.isRequired ? 'required' : 'recommended'),
      h(
        'td',
        { class: 'record-status' },
        badge(null, verified ? 'verified' : record.isRequired ? 'failed' : 'missing'),
        !verified && result?.error ? h('span', { class: 'reason' }, ` ${result.error}`) : null,
      ),
    );
  });
  return table(['Type', 'Name', 'Value', 'Need', 'Status'], rows, { class: 'records', 'aria-label': 'DNS records' });
}

function catchAllForm(domain, endpoints, rerender) {
  const enabled = h('input', { type: 'checkbox', name: 'catchAll', checked: domain.isCatchAllEnabled });
  const endpoint = endpointSelect(endpoints, {
    name: 'catchAllEndpoint',
    selectedId: domain.catchAllEndpointId,
    emptyLabel: 'No endpoint (store only)',
  });
  const save = h('button', { type: 'submit', 'data-focus': 'catch-all-save' }, 'Save catch-all');
  return inlineForm(
    () =>
      act(save, async () => {
        try {
          await put(`/api/v2/domains/${encodeURIComponent(domain.id)}`, {
            isCatchAllEnabled: enabled.checked,
            catchAllEndpointId: endpoint.value || null,
          });
        } catch (error) {
          // Nothing was saved: the form goes back to what is, and the notice says why.
          enabled.checked = domain.isCatchAllEnabled;
          endpoint.value = domain.catchAllEndpointId ?? '';
          throw error;
        }
        notify('Catch-all saved');
        await rerender();
      }),
    h('label', { class: 'check' }, enabled, ' Accept mail for any address on this domain'),
    field('Catch-all endpoint', endpoint),
    save,
  );
}

export async function showDomain(container, id) {
  const path = `/api/v2/domains/${encodeURIComponent(id)}`;
  const endpoints = await getAll('/api/v2/endpoints');
  const restoreFocus = focusKeeper(container);
  const render = async (check) => {
    const domain = await get(check ? `${path}?check=true` : path);
    const checkNow = actionButton(
      'Check now',
      async () => {
        await render(true);
        notify('DNS checked');
      },
      { class: 'primary', 'data-focus': 'check-now' },
    );
    const remove = actionButton(
      'Delete domain',
      async () => {
        if (!confirm(deleteQuestion(domain.domain))) return;
        await del(path);
        notify(`Deleted ${domain.domain}`);
        location.hash = '#/setup';
      },
      { class: 'danger' },
    );
    replace(
      container,
      heading(domain.domain),
      h('p', { class: 'toolbar' }, h('a', { class: 'button', href: '#/setup' }, 'Back to setup'), checkNow, remove),
      h(
        'p',
        { class: 'domain-status' },
        'Status: ',
        badge(null, domain.status),
        ` · last checked ${formatDate(domain.lastDnsCheck)}`,
        domain.inheritsFromParent ? ` · verified through ${domain.parentDomain}` : null,
      ),
      h('h2', {}, 'DNS records'),
      h('p', {}, 'Publish these records at your DNS provider, then check. Required records decide verification.'),
      shortMxWarning(domain),
      recordsTable(domain, check ? domain.verificationCheck : undefined),
      h('h2', {}, 'Catch-all'),
      catchAllForm(domain, endpoints, () => render(false)),
    );
    restoreFocus();
  };
  await render(false);
  return {
    onEvent: (event) => {
      if (event.type === 'domain.status_changed' && event.data?.domainId === id) render(false);
    },
  };
}
