import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { createForwardEndpoint, createWebhookEndpoint, routeAddress, waitForDelivery } from '../delivery/setup.ts';
import { type SmtpSink, startSmtpSink } from '../delivery/smtp-sink.ts';
import { startTestApp, type TestApp } from '../helpers/app.ts';
import { movableClock } from '../helpers/clock.ts';
import { type DnsServer, startDnsServer } from '../helpers/dns-server.ts';
import { createVerifiedDomain } from '../helpers/domains.ts';
import { type ApiClient, apiClient } from '../helpers/http.ts';
import { type PrometheusExposition, parsePrometheusText } from '../helpers/prometheus.ts';
import { sendMail } from '../helpers/smtp.ts';
import { startWebhookReceiver, type WebhookReceiver } from '../helpers/webhook-receiver.ts';

let dns: DnsServer;
let receiver: WebhookReceiver;
let sink: SmtpSink;
let server: TestApp;
let api: ApiClient;
let domainId: string;
const clock = movableClock();

before(async () => {
  dns = await startDnsServer();
  receiver = await startWebhookReceiver();
  sink = await startSmtpSink();
  server = await startTestApp(
    { DNS_SERVERS: dns.address, DELIVERY_RETRY_SCALE: '0.001', SMTP_RELAY_URL: sink.url },
    { clock },
  );
  api = apiClient(server.baseUrl, server.apiKey);
});
after(async () => {
  await server.close();
  await sink.close();
  await receiver.close();
  await dns.close();
});

async function scrape(): Promise<PrometheusExposition> {
  const response = await api.get('/metrics');
  assert.equal(response.status, 200, String(response.body));
  assert.equal(response.headers.get('content-type'), 'text/plain; version=0.0.4; charset=utf-8');
  return parsePrometheusText(response.body);
}

/** A message ending in CRLF: its DATA bytes are exactly these. */
function rawMessage(to: string, subject: string): string {
  return [`From: ann@sender.test`, `To: ${to}`, `Subject: ${subject}`, '', 'Hello there.', ''].join('\r\n');
}

describe('GET /metrics after real SMTP, deliveries and a domain check', () => {
  test('before anything happened, every labelled series is there at 0, so that rate() and increase() see the first event', async () => {
    const metrics = await scrape();
    const series = (name: string) =>
      metrics.samples.filter((sample) => sample.name === name).map(({ labels, value }) => ({ ...labels, value }));
    assert.deepEqual(
      series('mailroom_smtp_refusals_total'),
      [
        'unknown_domain',
        'unknown_address',
        'inactive_address',
        'unverified_domain',
        'message_too_large',
        'rate_limited',
        'too_many_connections',
        'server_full',
        'too_slow',
        'too_many_refusals',
        'too_many_errors',
        'connection_timeout',
        'insufficient_storage',
        'temporary_failure',
      ].map((reason) => ({ reason, value: 0 })),
    );
    const endpointTypes = ['webhook', 'email', 'email_group'];
    assert.deepEqual(
      series('mailroom_delivery_attempts_total'),
      endpointTypes.flatMap((type) =>
        ['success', 'retry', 'failed'].map((outcome) => ({ endpoint_type: type, outcome, value: 0 })),
      ),
    );
    assert.deepEqual(
      series('mailroom_delivery_duration_seconds_count'),
      endpointTypes.map((type) => ({ endpoint_type: type, value: 0 })),
    );
    assert.deepEqual(series('mailroom_domain_verification_checks_total'), [
      { result: 'verified', value: 0 },
      { result: 'unverified', value: 0 },
    ]);
    assert.deepEqual(
      series('mailroom_ingest_stage_duration_seconds_count'),
      ['blob', 'analysis', 'rules', 'write'].map((stage) => ({ stage, value: 0 })),
    );
  });

  test('counts what the test did: checks, accepted messages and bytes, refusals, deliveries per endpoint type', async () => {
    // Adding the domain checks it once (its records are not published yet), then the check passes.
    domainId = (await createVerifiedDomain(api, dns, 'metrics.test')).id;
    const webhook = await createWebhookEndpoint(api, 'Metrics hook', { url: receiver.url });
    await routeAddress(api, 'hook@metrics.test', domainId, { endpointId: webhook.id });
    const forward = await createForwardEndpoint(api, 'Metrics forward', 'email', { forwardTo: 'boss@elsewhere.test' });
    await routeAddress(api, 'fwd@metrics.test', domainId, { endpointId: forward.id });

    const first = rawMessage('hook@metrics.test', 'To the webhook');
    const second = rawMessage('fwd@metrics.test', 'To the forward');
    for (const [to, raw] of [
      ['hook@metrics.test', first],
      ['fwd@metrics.test', second],
    ] as const) {
      const sent = await sendMail({ port: server.smtpPort, from: 'ann@sender.test', to, raw });
      assert.equal(sent.code, 250, sent.response);
      await waitForDelivery(api, sent.queuedIds[0]!);
    }
    const unknownUser = await sendMail({ port: server.smtpPort, to: 'nobody@metrics.test' });
    assert.equal(unknownUser.code, 550, unknownUser.response);
    const relay = await sendMail({ port: server.smtpPort, to: 'someone@elsewhere.test' });
    assert.equal(relay.code, 550, relay.response);

    const metrics = await scrape();
    assert.equal(metrics.types.get('mailroom_smtp_messages_received_total'), 'counter');
    assert.equal(metrics.value('mailroom_smtp_messages_received_total'), 2);
    assert.equal(metrics.value('mailroom_smtp_received_bytes_total'), Buffer.byteLength(first + second));
    assert.equal(metrics.value('mailroom_smtp_refusals_total', { reason: 'unknown_address' }), 1);
    assert.equal(metrics.value('mailroom_smtp_refusals_total', { reason: 'unknown_domain' }), 1);
    assert.equal(metrics.types.get('mailroom_ingest_duration_seconds'), 'histogram');
    assert.equal(metrics.value('mailroom_ingest_duration_seconds_count'), 2);
    assert.equal(metrics.value('mailroom_ingest_duration_seconds_bucket', { le: '+Inf' }), 2);
    const ingestSeconds = metrics.value('mailroom_ingest_duration_seconds_sum')!;
    assert.ok(ingestSeconds > 0);
    // Blob and analysis run at once, then rules and write, all within the time to the 250.
    const stageSeconds = (stage: string) => {
      assert.equal(metrics.value('mailroom_ingest_stage_duration_seconds_count', { stage }), 2, stage);
      const seconds = metrics.value('mailroom_ingest_stage_duration_seconds_sum', { stage })!;
      assert.ok(seconds > 0, stage);
      return seconds;
    };
    const [blob, analysis, rules, write] = ['blob', 'analysis', 'rules', 'write'].map(stageSeconds) as [
      number,
      number,
      number,
      number,
    ];
    assert.ok(
      Math.max(blob, analysis) + rules + write <= ingestSeconds,
      `${[blob, analysis, rules, write]} ${ingestSeconds}`,
    );
    for (const endpointType of ['webhook', 'email']) {
      assert.equal(
        metrics.value('mailroom_delivery_attempts_total', { endpoint_type: endpointType, outcome: 'success' }),
        1,
      );
      assert.equal(metrics.value('mailroom_delivery_duration_seconds_count', { endpoint_type: endpointType }), 1);
    }
    assert.equal(metrics.value('mailroom_delivery_queue_depth'), 0);
    assert.equal(metrics.value('mailroom_delivery_oldest_pending_age_seconds'), 0);
    assert.equal(metrics.value('mailroom_domain_verification_checks_total', { result: 'unverified' }), 1);
    assert.equal(metrics.value('mailroom_domain_verification_checks_total', { result: 'verified' }), 1);
    // Node's process metrics are in the app's registry.
    assert.ok(metrics.value('process_resident_memory_bytes')! > 0);
    assert.ok(metrics.value('nodejs_heap_size_used_bytes')! > 0);
    assert.equal(metrics.types.get('nodejs_eventloop_lag_seconds'), 'gauge');
  });

  test('a delivery waiting for its retry is the queue depth, and its age follows the clock', async () => {
    // The receiver asks for an hour: the retry stays pending for the rest of the file.
    receiver.answer({ status: 503, headers: { 'Retry-After': '3600' } });
    const webhook = await createWebhookEndpoint(api, 'Busy hook', { url: receiver.url });
    await routeAddress(api, 'busy@metrics.test', domainId, { endpointId: webhook.id });
    const sent = await sendMail({ port: server.smtpPort, to: 'busy@metrics.test' });
    assert.equal(sent.code, 250, sent.response);
    await waitForDelivery(api, sent.queuedIds[0]!, (delivery) => delivery.attempts === 1);
    clock.advanceSeconds(600);

    const metrics = await scrape();
    assert.equal(metrics.value('mailroom_delivery_queue_depth'), 1);
    const age = metrics.value('mailroom_delivery_oldest_pending_age_seconds')!;
    assert.ok(age >= 600 && age < 660, `age ${age}`);
    assert.equal(metrics.value('mailroom_delivery_attempts_total', { endpoint_type: 'webhook', outcome: 'retry' }), 1);
    assert.equal(metrics.value('mailroom_smtp_messages_received_total'), 3);
  });
});

describe('GET /metrics: where it is served and who may read it', () => {
  test('on the HTTP port it asks for an API key (401 without), like the API', async () => {
    const anonymous = await apiClient(server.baseUrl).get('/metrics');
    assert.equal(anonymous.status, 401);
    assert.deepEqual(anonymous.body, {
      error: 'Unauthorized',
      detail: 'Missing Authorization header: send Authorization: Bearer <key>',
    });
  });

  test('METRICS_AUTH=none serves it on the HTTP port without a key', async () => {
    const open = await startTestApp({ METRICS_AUTH: 'none' });
    try {
      const response = await apiClient(open.baseUrl).get('/metrics');
      assert.equal(response.status, 200);
      assert.equal(parsePrometheusText(response.body).value('mailroom_smtp_messages_received_total'), 0);
    } finally {
      await open.close();
    }
  });

  test('METRICS_PORT gives it a listener of its own, without auth by default; the HTTP port no longer has it', async () => {
    const separate = await startTestApp({ METRICS_PORT: '0' });
    try {
      assert.ok(separate.metricsUrl);
      assert.notEqual(separate.metricsUrl, separate.baseUrl);
      const response = await apiClient(separate.metricsUrl).get('/metrics');
      assert.equal(response.status, 200);
      assert.equal(parsePrometheusText(response.body).value('mailroom_delivery_queue_depth'), 0);
      const elsewhere = await apiClient(separate.metricsUrl).get('/api/v2/domains');
      assert.deepEqual(elsewhere, {
        ...elsewhere,
        status: 404,
        body: { error: 'Route GET /api/v2/domains not found' },
      });
      const onHttp = await apiClient(separate.baseUrl, separate.apiKey).get('/metrics');
      assert.equal(onHttp.status, 404);
    } finally {
      await separate.close();
    }
  });

  test('METRICS_PORT with METRICS_AUTH=api_key asks its listener for a key', async () => {
    const guarded = await startTestApp({ METRICS_PORT: '0', METRICS_AUTH: 'api_key' });
    try {
      assert.equal((await apiClient(guarded.metricsUrl!).get('/metrics')).status, 401);
      assert.equal((await apiClient(guarded.metricsUrl!, guarded.apiKey).get('/metrics')).status, 200);
    } finally {
      await guarded.close();
    }
  });

  test('METRICS=false serves nothing at /metrics', async () => {
    const off = await startTestApp({ METRICS: 'false' });
    try {
      const response = await apiClient(off.baseUrl, off.apiKey).get('/metrics');
      assert.equal(response.status, 404);
      assert.equal(off.metricsUrl, undefined);
    } finally {
      await off.close();
    }
  });
});
