import { get, getAll, post, withQuery } from './api.js';
import { act, badge, field, formatDate, h, hashParams, hashWith, heading, notify, replace } from './dom.js';
import { actionButton, endpointSelect, inlineForm, pager, refresher, table } from './widgets.js';

const PAGE_SIZE = 50;

/** Retry for a delivery that has not succeeded: a delivered one has nothing left to retry. */
function retryButton(delivery, onDone) {
  if (delivery.status === 'success') return null;
  return actionButton('Retry', async () => {
    const answer = await post(`/api/v2/emails/${encodeURIComponent(delivery.emailId)}/retry-delivery`, {
      deliveryId: delivery.id,
    });
    notify(answer.message);
    onDone();
  });
}

function responseSummary(delivery) {
  const response = delivery.responseData ?? {};
  const parts = [];
  const status = response.responseCode ? `HTTP ${response.responseCode}` : null;
  if (status) parts.push(status);
  if (typeof response.deliveryTime === 'number') parts.push(`${response.deliveryTime} ms`);
  // A refusal's error is often just its status, said once already.
  if (delivery.lastError && delivery.lastError !== status) parts.push(delivery.lastError);
  return parts.join(' · ') || '—';
}

function deliveriesTable(deliveries, endpointNames, refresh) {
  const headers = ['Created', 'Email', 'Endpoint', 'Status', 'Attempts', 'Last response', 'Actions'];
  const rows = deliveries.map((delivery) =>
    h(
      'tr',
      {},
      h('td', {}, h('a', { href: `#/deliveries/${encodeURIComponent(delivery.id)}` }, formatDate(delivery.createdAt))),
      h('td', {}, h('a', { href: `#/mail/${encodeURIComponent(delivery.emailId)}` }, 'Open email')),
      h('td', {}, endpointNames.get(delivery.endpointId) ?? delivery.endpointId ?? delivery.targetType),
      h('td', {}, badge(null, delivery.status)),
      h('td', {}, String(delivery.attempts)),
      h('td', { class: 'response' }, responseSummary(delivery)),
      h('td', {}, retryButton(delivery, refresh)),
    ),
  );
  return table(headers, rows, { class: 'deliveries', 'aria-label': 'Deliveries' });
}

/** Success rate and the last failure of one endpoint, from its stats and the log's latest failed delivery. */
async function endpointHealth(endpointId) {
  const [endpoint, failures] = await Promise.all([
    get(`/api/v2/endpoints/${encodeURIComponent(endpointId)}`),
    get(withQuery('/api/v2/deliveries', { endpointId, status: 'failed', limit: 1 })),
  ]);
  const stats = endpoint.deliveryStats;
  const rate = stats.total === 0 ? 'no deliveries yet' : `${Math.round((stats.successful / stats.total) * 100)}%`;
  const lastFailure = failures.data[0];
  return h(
    'section',
    { class: 'card health', 'aria-labelledby': 'health-title' },
    h('h2', { id: 'health-title' }, `Health of ${endpoint.name}`),
    h(
      'dl',
      {},
      h('dt', {}, 'Success rate'),
      h('dd', {}, rate),
      h('dt', {}, 'Delivered / failed / total'),
      h('dd', {}, `${stats.successful} / ${stats.failed} / ${stats.total}`),
      h('dt', {}, 'Last failure'),
      h('dd', {}, lastFailure ? `${formatDate(lastFailure.lastAttemptAt)} · ${responseSummary(lastFailure)}` : 'none'),
    ),
  );
}

function replayForm(endpoints, endpointId) {
  const endpoint = endpointSelect(endpoints, {
    name: 'replayEndpoint',
    selectedId: endpointId,
    emptyLabel: 'Every endpoint',
  });
  const since = h('input', { type: 'datetime-local', name: 'since' });
  const until = h('input', { type: 'datetime-local', name: 'until' });
  const submit = h('button', { type: 'submit' }, 'Replay failed deliveries');
  return inlineForm(
    () =>
      act(submit, async () => {
        const answer = await post('/api/v2/deliveries/replay', {
          status: 'failed',
          ...(endpoint.value ? { endpointId: endpoint.value } : {}),
          ...(since.value ? { since: new Date(since.value).toISOString() } : {}),
          ...(until.value ? { until: new Date(until.value).toISOString() } : {}),
        });
        notify(`${answer.replayed} deliveries queued again`);
      }),
    field('Endpoint', endpoint),
    field('Failed since', since),
    field('Failed until', until),
    submit,
  );
}

function filterForm(filters, endpoints) {
  const endpoint = endpointSelect(endpoints, {
    name: 'endpointId',
    selectedId: filters.endpointId,
    emptyLabel: 'All endpoints',
  });
  const emailId = h('input', { type: 'text', name: 'emailId', value: filters.emailId });
  const status = h(
    'select',
    { name: 'status' },
    ['', 'pending', 'processing', 'success', 'failed'].map((one) =>
      h('option', { value: one, selected: one === filters.status }, one || 'Any status'),
    ),
  );
  const submit = () => {
    location.hash = hashWith('#/deliveries', {
      endpointId: endpoint.value,
      emailId: emailId.value.trim(),
      status: status.value,
    });
  };
  endpoint.addEventListener('change', submit);
  status.addEventListener('change', submit);
  return inlineForm(
    submit,
    field('Endpoint', endpoint),
    field('Email id', emailId),
    field('Status', status),
    h('button', { type: 'submit' }, 'Filter'),
  );
}

export async function showDeliveries(container) {
  const params = hashParams();
  const filters = {
    endpointId: params.get('endpointId') ?? '',
    emailId: params.get('emailId') ?? '',
    status: params.get('status') ?? '',
    offset: Number(params.get('offset') ?? 0) || 0,
  };
  const endpoints = await getAll('/api/v2/endpoints');
  const endpointNames = new Map(endpoints.map((one) => [one.id, one.name]));
  const path = withQuery('/api/v2/deliveries', { ...filters, limit: PAGE_SIZE });
  const log = h('div', {});
  const health = h('div', {});
  const render = async () => {
    const answer = await get(path);
    replace(
      log,
      answer.data.length === 0
        ? h('p', {}, 'No deliveries match.')
        : deliveriesTable(answer.data, endpointNames, render),
      pager('#/deliveries', { ...answer.pagination, count: answer.data.length }),
    );
    if (filters.endpointId) replace(health, await endpointHealth(filters.endpointId));
  };
  await render();
  replace(
    container,
    heading('Deliveries'),
    filterForm(filters, endpoints),
    health,
    log,
    h('h2', {}, 'Replay'),
    replayForm(endpoints, filters.endpointId),
  );
  const refresh = refresher(render);
  return {
    poll: refresh,
    onEvent: (event) => {
      if (event.type.startsWith('delivery.')) refresh();
    },
  };
}

/** What one attempt got back: its error and the endpoint's response body, each as plain text when present. */
function attemptResponse(attempt) {
  return [
    attempt.error ? h('p', { class: 'reason' }, attempt.error) : null,
    attempt.responseBody ? h('pre', { class: 'response-body' }, attempt.responseBody) : null,
  ];
}

export async function showDelivery(container, id) {
  const delivery = await get(`/api/v2/deliveries/${encodeURIComponent(id)}`);
  const rows = (delivery.attemptLog ?? []).map((attempt) =>
    h(
      'tr',
      {},
      h('td', {}, String(attempt.attempt)),
      h('td', {}, formatDate(attempt.startedAt)),
      h('td', {}, `${attempt.durationMs} ms`),
      h('td', {}, badge(null, attempt.success ? 'success' : 'failed')),
      h('td', {}, attempt.statusCode ? String(attempt.statusCode) : '—'),
      h('td', {}, attemptResponse(attempt)),
    ),
  );
  replace(
    container,
    heading('Delivery'),
    h(
      'p',
      { class: 'toolbar' },
      h(
        'a',
        { class: 'button', href: `#/deliveries?emailId=${encodeURIComponent(delivery.emailId)}` },
        'Back to deliveries',
      ),
      retryButton(delivery, () => showDelivery(container, id)),
    ),
    h(
      'dl',
      { class: 'addresses' },
      h('dt', {}, 'Status'),
      h('dd', {}, badge(null, delivery.status)),
      h('dt', {}, 'Email'),
      h('dd', {}, h('a', { href: `#/mail/${encodeURIComponent(delivery.emailId)}` }, delivery.emailId)),
      h('dt', {}, 'Target'),
      h('dd', {}, delivery.responseData?.url ?? delivery.targetType),
      h('dt', {}, 'Next attempt'),
      h('dd', {}, formatDate(delivery.nextAttemptAt)),
    ),
    h('h2', {}, 'Attempts'),
    table(['#', 'Started', 'Duration', 'Result', 'HTTP', 'Response'], rows, { 'aria-label': 'Attempts' }),
  );
}
