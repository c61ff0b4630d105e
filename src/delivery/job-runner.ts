import { firstCharacters, isOutage, type Logger, NotFound } from '../core/index.ts';
import type { Db } from '../db/index.ts';
import type {
  DeliveryTarget,
  DeliveryTargets,
  EndpointType,
  ForwardTarget,
  WebhookTarget,
} from '../endpoints/index.ts';
import { findStoredEmail, findStoredEmails, type HtmlCleaner, type StoredEmail } from '../mail/index.ts';
import type { RunnableJob } from './delivery-jobs.ts';
import { carriesCleanedHtml, MAX_RAW_CARRIED_BYTES } from './email-received-payload.ts';
import type { Forwarder } from './forwarder.ts';
import { type HttpSender, RESPONSE_BODY_CHARS } from './http-sender.ts';
import type { AttemptRecord, AttemptResult, DeliveryJob, OutboxStore } from './outbox-store.ts';
import { parseRetryAfter, type RetryPolicy } from './retry-policy.ts';
import { buildWebhookRequest } from './webhook-request.ts';

/** Stands for a stored message that could not be read, in place of its text. */
const UNREADABLE = Symbol('unreadable');
/** That attempt's error; the cause is logged, not shown (it names files of the server). */
const UNREADABLE_ERROR = 'Email content could not be read';

/** What an attempt ends in, as the metrics count it: the status of every AttemptResult is one of these. */
export const ATTEMPT_OUTCOMES = ['success', 'retry', 'failed'] as const;

/** What delivery reports per recorded attempt (app.ts hands it the metrics' recorder). */
export interface DeliveryObserver {
  attempted(endpointType: EndpointType, outcome: (typeof ATTEMPT_OUTCOMES)[number], durationSeconds: number): void;
}

export interface JobRunnerDeps {
  db: Db;
  store: OutboxStore;
  targets: DeliveryTargets;
  http: HttpSender;
  forwarder: Forwarder;
  policy: RetryPolicy;
  attachmentUrl: string;
  logger: Logger;
  now(): Date;
  observer?: DeliveryObserver;
  cleaner: Pick<HtmlCleaner, 'clean'>;
  /** The stored raw message; throws a NotFound when the store no longer has it whole. */
  readRaw(key: string): Promise<Buffer>;
}

/**
 * Runs one claimed job: one attempt, recorded, then success, failure or the next due time. `run` resolves to that
 * next due time when the job will be tried again, so the worker knows when to look without asking the database;
 * `attempted` is called once the attempt's request is over and only its record is left (or when there is none to make).
 */
export class JobRunner {
  private readonly deps: JobRunnerDeps;

  constructor(deps: JobRunnerDeps) {
    this.deps = deps;
  }

  /**
   * Claimed jobs with their emails and targets, read in one query each for the claim (a target once for its jobs)
   * rather than once per job. A job whose email or target is missing here reads it again when it runs, and finds it
   * gone; when the reads fail, each job makes its own as it runs, and reports what fails then.
   */
  readClaimed(jobs: readonly DeliveryJob[]): Promise<RunnableJob[]> {
    return this.readClaimedData(jobs).catch(() => jobs.map((job) => ({ job })));
  }

  private async readClaimedData(jobs: readonly DeliveryJob[]): Promise<RunnableJob[]> {
    const { db, targets } = this.deps;
    const loading = new Map<string, Promise<DeliveryTarget | undefined>>();
    for (const job of jobs) {
      const key = targetKey(job);
      if (!loading.has(key)) loading.set(key, targets.load(job));
    }
    const [emails, loaded] = await Promise.all([
      findStoredEmails(
        db,
        jobs.map((job) => job.email_id),
      ),
      Promise.all(jobs.map((job) => loading.get(targetKey(job))!)),
    ]);
    return jobs.map((job, index) => ({ job, email: emails.get(job.email_id), target: loaded[index] }));
  }

  async run(
    { job, email: handed, target: handedTarget, sanitizedHtml, raw }: RunnableJob,
    owner: string,
    attempted: () => void,
  ): Promise<Date | undefined> {
    const { store, targets, db } = this.deps;
    const [email, target] = await Promise.all([
      handed ?? findStoredEmail(db, job.email_id),
      handedTarget ?? targets.load(job),
    ]);
    if (!email || !target?.isActive) {
      attempted();
      const reason = !email ? 'Email not found' : !target ? 'Endpoint not found' : 'Endpoint is inactive';
      await store.abandon(job, owner, reason, this.deps.now());
      return undefined;
    }
    let attempt: AttemptRecord;
    let result: AttemptResult;
    try {
      [attempt, result] =
        target.kind === 'webhook'
          ? await this.runWebhook(job, email, target, { sanitizedHtml, raw }, attempted)
          : await this.runForward(job, email, target, attempted);
    } catch (error) {
      // The stored message is gone (readRaw's NotFound): no attempt can be made now or later, so it fails, saying why.
      if (!(error instanceof NotFound)) throw error;
      attempted();
      await store.abandon(job, owner, 'Email content not found', this.deps.now());
      return undefined;
    }
    const recorded = await store.finishAttempt({ job, owner, attempt, result, targetName: target.name });
    this.logAttempt(job, target, attempt, result, recorded);
    return recorded && result.status === 'retry' ? result.at : undefined;
  }

  /**
   * The raw message as the webhook body carries it: none past MAX_RAW_CARRIED_BYTES, ingest's copy for a fresh job,
   * else read from the store; a failed read as `unreadable` takes it.
   */
  private async rawText(
    job: DeliveryJob,
    email: StoredEmail,
    handed: RunnableJob['raw'],
  ): Promise<string | null | typeof UNREADABLE> {
    if (email.rawSize > MAX_RAW_CARRIED_BYTES) return null;
    if (handed) return Buffer.concat(handed).toString('utf8');
    try {
      return (await this.deps.readRaw(email.rawBlobKey)).toString('utf8');
    } catch (error) {
      return this.unreadable(job, error);
    }
  }

  /**
   * A failed read of the stored message: a lost one (NotFound) and a store out of reach are thrown on (the job is
   * abandoned, or tried again when its lease runs out); any other failure, which may last, is logged and answered
   * UNREADABLE, for the attempt to be recorded as such.
   */
  private unreadable(job: DeliveryJob, error: unknown): typeof UNREADABLE {
    if (error instanceof NotFound || isOutage(error)) throw error;
    this.deps.logger.error({ err: error, deliveryId: job.id }, 'stored message unreadable');
    return UNREADABLE;
  }

  /** Whether the attempt being recorded leaves room for another under the target's `retryAttempts`. */
  private retryOrFail(
    job: DeliveryJob,
    retryAttempts: number,
    startedAt: Date,
    durationMs: number,
    retryAfterMs?: number,
  ): AttemptResult {
    const attemptInRound = job.attempts + 1 - Number(job.round_start_attempt ?? 0);
    if (attemptInRound > retryAttempts) return { status: 'failed' };
    const delay = this.deps.policy.delayAfter(attemptInRound, retryAfterMs);
    return { status: 'retry', at: new Date(startedAt.getTime() + durationMs + delay) };
  }

  private async runWebhook(
    job: DeliveryJob,
    email: StoredEmail,
    target: WebhookTarget,
    handed: Pick<RunnableJob, 'sanitizedHtml' | 'raw'>,
    attempted: () => void,
  ): Promise<[AttemptRecord, AttemptResult]> {
    // A claimed job's email comes from the database, its HTML not sanitized yet and its raw message in the blob
    // store (ingest's copies went with fresh jobs).
    const { htmlBody } = email;
    const [cleanedHtml, raw] = await Promise.all([
      handed.sanitizedHtml ??
        (htmlBody !== null && carriesCleanedHtml(htmlBody) ? this.deps.cleaner.clean(htmlBody) : undefined),
      this.rawText(job, email, handed.raw),
    ]);
    const startedAt = this.deps.now();
    if (raw === UNREADABLE) {
      // Nothing is sent without the message; the attempt is recorded, so the delivery ends after its retries.
      attempted();
      const attempt: AttemptRecord = {
        startedAt,
        durationMs: 0,
        success: false,
        statusCode: null,
        responseBody: null,
        error: UNREADABLE_ERROR,
        url: target.url,
        recipients: null,
      };
      return [attempt, this.retryOrFail(job, target.retryAttempts, startedAt, 0)];
    }
    const request = buildWebhookRequest({
      target,
      email,
      raw,
      sanitizedHtml: cleanedHtml,
      webhookId: job.id,
      timestamp: startedAt,
      attachmentUrl: this.deps.attachmentUrl,
    });
    const outcome = await this.deps.http.post(request);
    attempted();
    const status = outcome.statusCode;
    const success = status !== undefined && status >= 200 && status < 300;
    const attempt: AttemptRecord = {
      startedAt,
      durationMs: outcome.durationMs,
      success,
      statusCode: status ?? null,
      responseBody: status === undefined ? null : outcome.body,
      error: outcome.error ?? (success ? null : status === 410 ? 'HTTP 410: endpoint deactivated' : `HTTP ${status}`),
      url: request.url,
      recipients: null,
      details: { payloadSize: Buffer.byteLength(request.body), strippedFields: request.trimmed },
    };
    let result: AttemptResult;
    if (success) result = { status: 'success' };
    else if (outcome.blocked) result = { status: 'failed' };
    else if (status === 410) {
      result = { status: 'failed', endpointDeactivated: true };
      await this.deps.targets.deactivate(
        target,
        `Deactivated at ${startedAt.toISOString()}: ${request.url} answered 410 Gone`,
      );
    } else {
      const retryAfter =
        status === 429 || status === 503
          ? parseRetryAfter(headerText(outcome.headers['retry-after']), startedAt)
          : undefined;
      result = this.retryOrFail(job, target.retryAttempts, startedAt, outcome.durationMs, retryAfter);
    }
    return [attempt, result];
  }

  private async runForward(
    job: DeliveryJob,
    email: StoredEmail,
    target: ForwardTarget,
    attempted: () => void,
  ): Promise<[AttemptRecord, AttemptResult]> {
    const startedAt = this.deps.now();
    const started = performance.now();
    const alreadySent = new Set(job.attempts > 0 ? await this.deps.store.recipientsReached(job.id) : []);
    let forwarded: Awaited<ReturnType<Forwarder['forward']>>;
    try {
      // A resend starts a new round, and so a new message: a copy the recipient's server would otherwise drop.
      const identity = `${job.id}.${Number(job.round_start_attempt ?? 0)}`;
      forwarded = await this.deps.forwarder.forward(email, target, alreadySent, identity);
    } catch (error) {
      // Only reading the stored message for its attachments throws here.
      this.unreadable(job, error);
      forwarded = {
        recipients: target.recipients.map((address) => ({
          address,
          status: alreadySent.has(address.toLowerCase()) ? 'skipped' : 'failed',
          error: UNREADABLE_ERROR,
          temporary: true,
        })),
      };
    }
    attempted();
    const durationMs = Math.round(performance.now() - started);
    const failed = forwarded.recipients.filter((r) => r.status === 'failed');
    const success = !forwarded.refused && failed.length === 0 && forwarded.recipients.length > 0;
    const sent = forwarded.recipients.filter((r) => r.status === 'sent');
    const attempt: AttemptRecord = {
      startedAt,
      durationMs,
      success,
      statusCode: success ? 250 : null,
      responseBody:
        firstCharacters(sent.map((r) => `${r.address}: ${r.response}`).join('\n'), RESPONSE_BODY_CHARS) || null,
      error:
        forwarded.refused ??
        (failed.map((r) => `${r.address}: ${r.error}`).join('; ') ||
          (forwarded.recipients.length === 0 ? 'No recipients configured' : null)),
      url: null,
      recipients: forwarded.recipients.map(({ temporary: _temporary, ...r }) => r),
    };
    let result: AttemptResult;
    if (success) result = { status: 'success' };
    else if (forwarded.refused || !failed.some((r) => r.temporary)) result = { status: 'failed' };
    else result = this.retryOrFail(job, target.retryAttempts, startedAt, durationMs);
    return [attempt, result];
  }

  /**
   * One line per attempt, without the response body, and the attempt counted for the metrics. An attempt whose email
   * was erased meanwhile was not recorded (the erase won): an expected end, logged as such.
   */
  private logAttempt(
    job: DeliveryJob,
    target: DeliveryTarget,
    attempt: AttemptRecord,
    result: AttemptResult,
    recorded: boolean,
  ): void {
    const endpointType = target.kind === 'webhook' ? 'webhook' : target.endpointType;
    this.deps.observer?.attempted(endpointType, result.status, attempt.durationMs / 1000);
    this.deps.logger.info(
      {
        deliveryId: job.id,
        emailId: job.email_id,
        endpointId: target.id,
        endpointType,
        status: result.status,
        statusCode: attempt.statusCode,
        durationMs: attempt.durationMs,
        nextAttemptAt: result.status === 'retry' ? result.at.toISOString() : null,
        error: attempt.error,
      },
      recorded ? 'delivery attempt' : 'delivery attempt not recorded: its email was erased meanwhile',
    );
  }
}

function targetKey(job: DeliveryJob): string {
  return `${job.account_id}:${job.target_type}:${job.target_id}`;
}

function headerText(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}
