import assert from 'node:assert/strict';
import { Webhook } from 'standardwebhooks';
import { type EventStream, openEventStream, type StreamEvent } from '../events/sse-client.ts';
import { movableClock } from '../helpers/clock.ts';
import { eventually } from '../helpers/eventually.ts';
import { startWebhookReceiver, type WebhookReceiver } from '../helpers/webhook-receiver.ts';
import { type MailWorld, startMailWorld } from '../mail/setup.ts';

/** How often the re-check of a verified domain's records falls due, in the tests. */
export const DNS_CHECK_MINUTES = 60;

export interface AlertWorld extends MailWorld {
  clock: ReturnType<typeof movableClock>;
  /** The account's alert endpoint. */
  alerts: WebhookReceiver;
  /** The secret the alert webhooks are signed with. */
  secret: string;
  /** The default account's event stream, opened once the world was set up. */
  stream: EventStream;
}

/**
 * A running Mailroom with verified domains and addresses (see startMailWorld) whose alert checks run every 100 ms of
 * real time, with a clock the test moves forward, and an alert endpoint on a loopback receiver.
 */
export async function startAlertWorld(addresses: string[], env: Record<string, string> = {}): Promise<AlertWorld> {
  const clock = movableClock();
  const alerts = await startWebhookReceiver();
  const world = await startMailWorld(
    addresses,
    {
      ALERT_CHECK_SECONDS: '0.1',
      ALERT_DNS_CHECK_MINUTES: String(DNS_CHECK_MINUTES),
      DELIVERY_RETRY_SCALE: '0.001',
      ...env,
    },
    { clock },
  );
  const settings = await world.api.put('/api/v2/alerts/settings', { endpointUrl: alerts.url });
  assert.equal(settings.status, 200, JSON.stringify(settings.body));
  const stream = await openEventStream(world.server.baseUrl, world.server.apiKey);
  return {
    ...world,
    clock,
    alerts,
    secret: settings.body.secret,
    stream,
    async close() {
      await stream.close();
      await world.close();
      await alerts.close();
    },
  };
}

/** The stream's alert events so far, as `[type, kind, subject name]`. */
export function alertEvents(stream: EventStream): Array<[string, string, string]> {
  return stream.events
    .filter((event) => event.event.startsWith('alert.'))
    .map((event) => {
      const alert = event.data.alert as { kind: string; subject: { name: string } };
      return [event.event, alert.kind, alert.subject.name];
    });
}

/** Waits until the stream has an event `match` accepts; returns it. */
export async function waitForEvent(stream: EventStream, match: (event: StreamEvent) => boolean): Promise<StreamEvent> {
  for (let count = 1; count <= 500; count++) {
    const events = await stream.waitFor(count);
    if (match(events.at(-1)!)) return events.at(-1)!;
  }
  throw new Error(`no matching event in ${JSON.stringify(stream.events)}`);
}

/** Waits for the alert event of `type` about the subject named `name`; returns the alert it carries. */
export async function waitForAlert(stream: EventStream, type: 'alert.raised' | 'alert.cleared', name: string) {
  const event = await waitForEvent(
    stream,
    (candidate) =>
      candidate.event === type && (candidate.data.alert as { subject: { name: string } }).subject.name === name,
  );
  return event.data.alert as Record<string, any>;
}

/**
 * The alert webhooks received so far, each signature checked against one the standardwebhooks package makes with
 * the account's secret, as `[type, kind, subject name]`. (Its `verify` also wants the timestamp near the real time,
 * and the tests move Mailroom's clock hours ahead.)
 */
export function verifiedAlertWebhooks(world: AlertWorld): Array<[string, string, string]> {
  const webhook = new Webhook(world.secret);
  return world.alerts.requests.map((request) => {
    const id = String(request.headers['webhook-id']);
    const timestamp = new Date(Number(request.headers['webhook-timestamp']) * 1000);
    assert.equal(request.headers['webhook-signature'], webhook.sign(id, timestamp, request.body));
    const payload = JSON.parse(request.body) as {
      type: string;
      data: { alert: { kind: string; subject: { name: string } } };
    };
    assert.equal(request.headers['x-webhook-event'], payload.type);
    return [payload.type, payload.data.alert.kind, payload.data.alert.subject.name];
  });
}

/**
 * Moves Mailroom's clock `minutes` ahead once no alert webhook is being sent: a send under way when the clock jumps
 * past its lease would be taken over and sent again, as at-least-once delivery allows.
 */
export async function advanceClock(world: AlertWorld, minutes: number): Promise<void> {
  await eventually(async () => {
    const sending = await world.server.app.database.db
      .selectFrom('alert_notifications')
      .select('id')
      .where('status', '=', 'processing')
      .execute();
    return sending.length === 0;
  }, 'no alert webhook being sent');
  world.clock.advanceMinutes(minutes);
}

/**
 * Moves the clock past the DNS re-check interval and waits until a check pass has re-checked the domain, twice: the
 * second claim starts a pass after the one that re-checked first had finished (passes run one at a time), so every
 * check of that first pass, silent inboxes and open alerts too, is done.
 */
export async function completeCheckPasses(world: AlertWorld, domainId: string): Promise<void> {
  for (let pass = 0; pass < 2; pass++) {
    await advanceClock(world, DNS_CHECK_MINUTES + 1);
    const due = world.clock.now().toISOString();
    for (let poll = 0; ; poll++) {
      const domain = await world.api.get(`/api/v2/domains/${domainId}`);
      if (domain.body.lastDnsCheck >= due) break;
      assert.ok(poll < 300, `the domain was not re-checked: ${JSON.stringify(domain.body)}`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }
}
