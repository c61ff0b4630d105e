import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { startTestApp, TEST_DATABASE_URL, type TestApp } from '../helpers/app.ts';
import { type PrometheusExposition, parsePrometheusText } from '../helpers/prometheus.ts';
import { sendMail } from '../helpers/smtp.ts';
import { startTcpProxy, type TcpProxy } from '../helpers/tcp-proxy.ts';

const skip = !TEST_DATABASE_URL && 'PostgreSQL only: a SQLite file does not go away';
let proxy: TcpProxy;
let server: TestApp;
const warnings: string[] = [];

before(async () => {
  if (skip) return;
  const direct = new URL(TEST_DATABASE_URL!);
  proxy = await startTcpProxy({ host: direct.hostname, port: Number(direct.port || 5432) });
  const proxied = new URL(direct);
  proxied.host = `127.0.0.1:${proxy.port}`;
  // The listener of its own asks for no key, so a scrape needs nothing of the database but the queue's read.
  server = await startTestApp({ DATABASE_URL: proxied.toString(), METRICS_PORT: '0' }, { warnings });
});
after(async () => {
  if (skip) return;
  proxy.restore();
  proxy.resume();
  await server.close();
  await proxy.close();
});

/** A scrape, and how long it took to answer. */
async function scrape(): Promise<{ metrics: PrometheusExposition; seconds: number }> {
  const started = performance.now();
  const response = await fetch(`${server.metricsUrl}/metrics`, { signal: AbortSignal.timeout(20_000) });
  const seconds = (performance.now() - started) / 1000;
  const text = await response.text();
  assert.equal(response.status, 200, text);
  return { metrics: parsePrometheusText(text), seconds };
}

test('GET /metrics while PostgreSQL stalls or is cut off: 200 within seconds without the queue gauges, the 451s counted; the gauges come back with it', {
  skip,
}, async () => {
  assert.equal((await scrape()).metrics.value('mailroom_delivery_queue_depth'), 0);

  proxy.stall();
  const stalled = await scrape();
  assert.ok(stalled.seconds < 8, `answered after ${stalled.seconds} s`);
  assert.equal(stalled.metrics.value('mailroom_delivery_queue_depth'), undefined);
  assert.equal(stalled.metrics.value('mailroom_delivery_oldest_pending_age_seconds'), undefined);
  assert.equal(stalled.metrics.value('mailroom_smtp_messages_received_total'), 0);
  assert.ok(stalled.metrics.value('process_resident_memory_bytes')! > 0);
  proxy.resume();

  proxy.cut();
  // Routing cannot read the recipient's domain: the sender is told to retry, and the scrape says so.
  const deferred = await sendMail({ port: server.smtpPort, to: 'someone@outage.test' });
  assert.equal(deferred.code, 451, deferred.response);
  const cut = await scrape();
  assert.equal(cut.metrics.value('mailroom_smtp_refusals_total', { reason: 'temporary_failure' }), 1);
  assert.equal(cut.metrics.value('mailroom_delivery_queue_depth'), undefined);
  assert.ok(warnings.includes('delivery queue not read for a scrape: its gauges left out'), String(warnings));

  proxy.restore();
  const back = await scrape();
  assert.equal(back.metrics.value('mailroom_delivery_queue_depth'), 0);
  assert.equal(back.metrics.value('mailroom_delivery_oldest_pending_age_seconds'), 0);
});
