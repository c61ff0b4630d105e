import type { Selectable } from 'kysely';
import type { Clock, Page } from '../core/index.ts';
import { Busy, Invalid, isoNow, NotFound, newId } from '../core/index.ts';
import type { Db, DeliveriesTable, DeliveryAttemptsTable, DeliveryStatus } from '../db/index.ts';
import type { DeliveryTargets } from '../endpoints/index.ts';
import { hasEmail } from '../mail/index.ts';
import { insertDeliveryJob } from './delivery-jobs.ts';
import { buildEmailReceivedPayload, type PayloadEmail } from './email-received-payload.ts';
import type { Forwarder } from './forwarder.ts';
import type { HttpSender } from './http-sender.ts';
import { buildWebhookRequest } from './webhook-request.ts';

export interface EndpointTestResult {
  success: boolean;
  message: string;
  responseTime: number;
  statusCode?: number;
  responseBody?: string;
  error?: string;
  testPayload: unknown;
  webhookFormat: 'inbound';
  urlTested?: string;
}

export type DeliveryRecord = Selectable<DeliveriesTable> & { attempt_log: Array<Selectable<DeliveryAttemptsTable>> };

export interface ReplayQuery {
  endpointId?: string;
  status?: 'failed';
  since?: string;
  until?: string;
}

const ALREADY_SUCCEEDED = 'Delivery already succeeded. Use resend to deliver again.';
const IN_FLIGHT = 'Delivery is being attempted now: retry it once this attempt is recorded';

function isoOrThrow(value: string | undefined, name: string): string | undefined {
  if (value === undefined) return undefined;
  const time = Date.parse(value);
  if (Number.isNaN(time)) throw new Invalid(`${name} must be an ISO 8601 date-time`);
  return new Date(time).toISOString();
}

/**
 * The delivery operations behind the API: manual retry of one email's deliveries, endpoint tests with a synthetic
 * `email.received`, and bulk replay by query. Queuing is all they do to real jobs; the worker sends.
 */
export class DeliveryService {
  private readonly db: Db;
  private readonly clock: Clock;
  private readonly targets: DeliveryTargets;
  private readonly http: HttpSender;
  private readonly forwarder: Forwarder;
  private readonly settings: { attachmentUrl: string };
  private readonly jobsQueued: () => void;

  constructor(deps: {
    db: Db;
    clock: Clock;
    targets: DeliveryTargets;
    http: HttpSender;
    forwarder: Forwarder;
    settings: { attachmentUrl: string };
    jobsQueued: () => void;
  }) {
    this.db = deps.db;
    this.clock = deps.clock;
    this.targets = deps.targets;
    this.http = deps.http;
    this.forwarder = deps.forwarder;
    this.settings = deps.settings;
    this.jobsQueued = deps.jobsQueued;
  }

  /**
   * Queues an email's deliveries again: one delivery, the one to an endpoint (created if the email never went
   * there), or every unsuccessful one. Each gets a fresh automatic-retry budget. Returns the queued delivery ids.
   */
  async retryEmail(
    accountId: string,
    emailId: string,
    which: { endpointId?: string; deliveryId?: string },
    options: { evenIfSucceeded?: boolean } = {},
  ): Promise<string[]> {
    if (!(await hasEmail(this.db, accountId, emailId))) throw new NotFound('Email not found');
    const deliveries = this.db
      .selectFrom('deliveries')
      .select(['id', 'status', 'target_id'])
      .where('email_id', '=', emailId)
      .where('account_id', '=', accountId);

    let chosen: Array<{ id: string; status: string }>;
    if (which.deliveryId) {
      const row = await deliveries.where('id', '=', which.deliveryId).executeTakeFirst();
      if (!row) throw new NotFound('Delivery not found for this email');
      chosen = [row];
    } else if (which.endpointId) {
      const target = await this.targets.loadEndpoint(accountId, which.endpointId);
      if (!target?.isActive) throw new NotFound('Endpoint not found or is inactive');
      const existing = () => deliveries.where('target_id', '=', target.id).executeTakeFirst();
      const endpointType = target.kind === 'webhook' ? 'webhook' : target.endpointType;
      if (!(await existing())) {
        await insertDeliveryJob(
          this.db,
          { accountId, emailId, target: { targetType: 'endpoint', targetId: target.id, endpointType } },
          isoNow(this.clock),
        );
      }
      // Ours or a concurrent request's; none when the email was erased since.
      const row = await existing();
      if (!row) throw new NotFound('Email not found');
      chosen = [row];
    } else {
      const rows = await deliveries.execute();
      if (rows.length === 0) throw new NotFound('Delivery not found for this email');
      chosen = rows.filter((row) => row.status !== 'success');
      if (chosen.length === 0) throw new Invalid(ALREADY_SUCCEEDED);
    }
    if (chosen.length === 1 && chosen[0]!.status === 'success' && !options.evenIfSucceeded) {
      throw new Invalid(ALREADY_SUCCEEDED);
    }
    // A job in flight is left alone by requeue; queued would be a promise nobody keeps.
    if (chosen.length === 1 && chosen[0]!.status === 'processing') throw new Busy(IN_FLIGHT);
    await this.requeue(
      chosen.map((row) => row.id),
      options.evenIfSucceeded ? ['pending', 'failed', 'success'] : ['pending', 'failed'],
    );
    return chosen.map((row) => row.id);
  }

  /**
   * Delivers an email to an endpoint once more, whatever became of its delivery there: the way to send again what a
   * receiver accepted and then lost. An email has one delivery per endpoint, so it is that delivery again, with its
   * `webhook-id` (the same message) and a fresh retry budget, or a new one if the email never went there.
   */
  async resendEmail(accountId: string, emailId: string, endpointId: string): Promise<string> {
    const [id] = await this.retryEmail(accountId, emailId, { endpointId }, { evenIfSucceeded: true });
    return id!;
  }

  /** Makes jobs due now with a fresh retry budget. A job in flight is left alone: it is being sent already. */
  private async requeue(ids: string[], from: DeliveryStatus[] = ['pending', 'failed']): Promise<number> {
    if (ids.length === 0) return 0;
    const now = isoNow(this.clock);
    const result = await this.db
      .updateTable('deliveries')
      .set((eb) => ({
        status: 'pending',
        next_attempt_at: now,
        round_start_attempt: eb.ref('attempts'),
        lease_owner: null,
        lease_expires_at: null,
        queued_at: now,
        updated_at: now,
      }))
      .where('id', 'in', ids)
      .where('status', 'in', from)
      .executeTakeFirst();
    this.jobsQueued();
    return Number(result.numUpdatedRows);
  }

  /** Re-queues the account's deliveries matching the query (by default the failed ones). Returns how many. */
  async replay(accountId: string, query: ReplayQuery): Promise<{ replayed: number; deliveryIds: string[] }> {
    const since = isoOrThrow(query.since, 'since');
    const until = isoOrThrow(query.until, 'until');
    if (query.status !== undefined && query.status !== 'failed') throw new Invalid('status must be failed');
    // An empty endpointId (a client's unset variable) names no endpoint; read as absent it would replay them all.
    if (query.endpointId !== undefined) {
      if (!(await this.targets.exists(accountId, query.endpointId))) throw new NotFound('Endpoint not found');
    }
    let select = this.db
      .selectFrom('deliveries')
      .select('id')
      .where('account_id', '=', accountId)
      .where('status', '=', 'failed');
    if (query.endpointId !== undefined) select = select.where('target_id', '=', query.endpointId);
    if (since) select = select.where('created_at', '>=', since);
    if (until) select = select.where('created_at', '<', until);
    const ids = (await select.execute()).map((row) => row.id);
    let replayed = 0;
    for (let i = 0; i < ids.length; i += 500) replayed += await this.requeue(ids.slice(i, i + 500));
    return { replayed, deliveryIds: ids };
  }

  /** One delivery of the account with its full attempt log, oldest attempt first. */
  async getDelivery(accountId: string, id: string): Promise<DeliveryRecord> {
    const row = await this.db
      .selectFrom('deliveries')
      .selectAll()
      .where('id', '=', id)
      .where('account_id', '=', accountId)
      .executeTakeFirst();
    if (!row) throw new NotFound('Delivery not found');
    const attempts = await this.db
      .selectFrom('delivery_attempts')
      .selectAll()
      .where('delivery_id', '=', id)
      .orderBy('attempt')
      .execute();
    return { ...row, attempt_log: attempts };
  }

  /** The account's deliveries, newest first, filtered by endpoint, email and status. */
  async listDeliveries(
    accountId: string,
    query: { endpointId?: string; emailId?: string; status?: DeliveryStatus; limit: number; offset: number },
  ): Promise<Page<Selectable<DeliveriesTable>>> {
    let select = this.db.selectFrom('deliveries').where('account_id', '=', accountId);
    if (query.endpointId) select = select.where('target_id', '=', query.endpointId);
    if (query.emailId) select = select.where('email_id', '=', query.emailId);
    if (query.status) select = select.where('status', '=', query.status);
    const [rows, count] = await Promise.all([
      select
        .selectAll()
        .orderBy('created_at', 'desc')
        .orderBy('id', 'desc')
        .limit(query.limit)
        .offset(query.offset)
        .execute(),
      select.select((eb) => eb.fn.countAll().as('total')).executeTakeFirstOrThrow(),
    ]);
    return { items: rows, total: Number(count.total) };
  }

  /** Sends a synthetic `email.received` (built by the same builder as real ones) and reports what the target said. */
  async testEndpoint(
    accountId: string,
    endpointId: string,
    options: { overrideUrl?: string } = {},
  ): Promise<EndpointTestResult> {
    const target = await this.targets.loadEndpoint(accountId, endpointId);
    if (!target) throw new NotFound('Endpoint not found');
    const now = this.clock.now();
    const email = syntheticEmail(now);
    const raw = syntheticRaw(email);
    if (target.kind === 'webhook') {
      const request = buildWebhookRequest({
        target,
        email,
        raw,
        webhookId: newId('msg'),
        timestamp: now,
        attachmentUrl: this.settings.attachmentUrl,
        url: options.overrideUrl,
      });
      const outcome = await this.http.post(request);
      const success = outcome.statusCode !== undefined && outcome.statusCode >= 200 && outcome.statusCode < 300;
      const error = outcome.error ?? (success ? undefined : `HTTP ${outcome.statusCode}`);
      return {
        success,
        message: success ? 'Webhook test successful' : `Webhook test failed: ${error}`,
        responseTime: outcome.durationMs,
        ...(outcome.statusCode !== undefined ? { statusCode: outcome.statusCode, responseBody: outcome.body } : {}),
        ...(error ? { error } : {}),
        testPayload: JSON.parse(request.body),
        webhookFormat: 'inbound',
        urlTested: request.url,
      };
    }
    // Sent from the receiving address, as a real forward is: a domain of the account's, not someone else's.
    const recipient = await this.targets.testRecipient(accountId, target.id);
    const forwarded = { ...email, recipient: recipient ?? email.recipient };
    const testPayload = JSON.parse(
      buildEmailReceivedPayload({
        email: forwarded,
        raw,
        endpoint: { id: target.id, name: target.name, type: target.endpointType },
        attachmentUrl: this.settings.attachmentUrl,
        timestamp: now,
      }).body,
    );
    if (!recipient) {
      const error =
        'No verified domain to send from: a forward is sent from the receiving address, on a verified domain';
      return {
        success: false,
        message: `Email test failed: ${error}`,
        responseTime: 0,
        error,
        testPayload,
        webhookFormat: 'inbound',
      };
    }
    const started = performance.now();
    const result = await this.forwarder.forward(
      {
        ...forwarded,
        fromAddress: 'test@example.com',
        fromName: 'Mailroom Test',
        mailFrom: 'test@example.com',
        rawBlobKey: '',
        attachments: [],
      },
      target,
      new Set(),
    );
    const failed = result.recipients.filter((r) => r.status === 'failed');
    const success = !result.refused && failed.length === 0 && result.recipients.length > 0;
    const error = result.refused ?? failed.map((r) => `${r.address}: ${r.error}`).join('; ');
    return {
      success,
      message: success ? `Test email sent to ${target.recipients.join(', ')}` : `Email test failed: ${error}`,
      responseTime: Math.round(performance.now() - started),
      ...(success ? { statusCode: 250, responseBody: result.recipients.map((r) => r.response).join('\n') } : { error }),
      testPayload,
      webhookFormat: 'inbound',
    };
  }
}

/** The email an endpoint test delivers: every field present, as in a real message with one attachment. */
function syntheticEmail(now: Date): PayloadEmail {
  const id = newId('email', now.getTime());
  const messageId = `<test-${id}@mailroom.test>`;
  const address = (text: string, name: string | null) => ({
    text,
    addresses: [{ name, address: text.replace(/.*<|>.*/g, '') }],
  });
  return {
    id,
    recipient: 'test@yourdomain.com',
    messageId,
    subject: 'Test webhook from Mailroom',
    from: address('Mailroom Test <test@example.com>', 'Mailroom Test'),
    to: address('test@yourdomain.com', null),
    cc: null,
    bcc: null,
    replyTo: null,
    sentDate: now.toISOString(),
    inReplyTo: null,
    references: [],
    priority: 'normal',
    textBody: 'This is a test email.received event sent by Mailroom to check your endpoint.',
    htmlBody: '<p>This is a test <code>email.received</code> event sent by Mailroom to check your endpoint.</p>',
    headers: {
      from: 'Mailroom Test <test@example.com>',
      to: 'test@yourdomain.com',
      subject: 'Test webhook from Mailroom',
      'message-id': messageId,
      date: now.toUTCString(),
    },
    attachments: [
      { filename: 'test.txt', contentType: 'text/plain', size: 12, contentId: null, contentDisposition: 'attachment' },
    ],
    threadId: null,
    threadPosition: null,
    receivedAt: now.toISOString(),
  };
}

/** The message the synthetic email reads as parsed: what its `parsedData.raw` shows. */
function syntheticRaw(email: PayloadEmail): string {
  const header = (name: string) => email.headers[name] as string;
  return [
    `From: ${header('from')}`,
    `To: ${header('to')}`,
    `Subject: ${header('subject')}`,
    `Message-ID: ${header('message-id')}`,
    `Date: ${header('date')}`,
    'MIME-Version: 1.0',
    'Content-Type: multipart/mixed; boundary="mailroom-test"',
    '',
    '--mailroom-test',
    'Content-Type: multipart/alternative; boundary="mailroom-test-body"',
    '',
    '--mailroom-test-body',
    'Content-Type: text/plain; charset=utf-8',
    '',
    email.textBody,
    '--mailroom-test-body',
    'Content-Type: text/html; charset=utf-8',
    '',
    email.htmlBody,
    '--mailroom-test-body--',
    '--mailroom-test',
    'Content-Type: text/plain; name="test.txt"',
    'Content-Disposition: attachment; filename="test.txt"',
    'Content-Transfer-Encoding: base64',
    '',
    Buffer.from('Test content').toString('base64'),
    '--mailroom-test--',
    '',
  ].join('\r\n');
}
