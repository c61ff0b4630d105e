import { type Clock, isoNow, type Logger } from '../core/index.ts';
import { type Db, onPostgres } from '../db/index.ts';
import { type HttpSender, type RetryPolicy, standardWebhookSignature } from '../delivery/index.ts';
import { DEFAULT_RETRY_ATTEMPTS, DEFAULT_TIMEOUT_SECONDS } from '../endpoints/index.ts';

/** Alert webhooks claimed at once. */
const CLAIM_BATCH = 20;
/** How long a claimed webhook is this process's before another may take it (its sender died). */
const LEASE_MS = 2 * DEFAULT_TIMEOUT_SECONDS * 1000;

/**
 * Sends the alert outbox: each alert webhook signed with the account's alert secret (Standard Webhooks, `webhook-id`
 * the same on every attempt), retried on the delivery schedule until a 2xx answer or DEFAULT_RETRY_ATTEMPTS retries.
 * Claims take due rows with SKIP LOCKED on PostgreSQL; while claimed, `next_attempt_at` holds the lease expiry, which
 * also fences the outcome (a sender whose lease was taken over records nothing).
 */
export class AlertNotifier {
  readonly #db: Db;
  readonly #postgres: boolean;
  readonly #clock: Clock;
  readonly #http: HttpSender;
  readonly #policy: RetryPolicy;
  readonly #userAgent: string;
  readonly #logger: Logger;
  #sending: Promise<void> | undefined;
  #sendAgain = false;
  #retryTimer: NodeJS.Timeout | undefined;
  #retryTimerAt = 0;
  #stopped = false;

  constructor(deps: {
    db: Db;
    clock: Clock;
    http: HttpSender;
    policy: RetryPolicy;
    userAgent: string;
    logger: Logger;
  }) {
    this.#db = deps.db;
    this.#postgres = onPostgres(deps.db);
    this.#clock = deps.clock;
    this.#http = deps.http;
    this.#policy = deps.policy;
    this.#userAgent = deps.userAgent;
    this.#logger = deps.logger;
  }

  /** Sends what is due now; a call while a pass runs makes it pass again. Resolves when no pass is running. */
  sendDue(): Promise<void> {
    if (this.#stopped) return Promise.resolve();
    if (this.#sending) {
      this.#sendAgain = true;
      return this.#sending;
    }
    this.#sending = this.#pass()
      .catch((error) => this.#logger.error({ err: error }, 'alert webhooks failed'))
      .finally(() => {
        this.#sending = undefined;
        if (this.#sendAgain) {
          this.#sendAgain = false;
          void this.sendDue();
        }
      });
    return this.#sending;
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    clearTimeout(this.#retryTimer);
    await this.#sending;
  }

  async #pass(): Promise<void> {
    for (;;) {
      const claimed = await this.#claim();
      await Promise.all(claimed.map((row) => this.#send(row)));
      if (claimed.length < CLAIM_BATCH) return;
    }
  }

  async #claim() {
    const now = this.#clock.now();
    const lease = new Date(now.getTime() + LEASE_MS).toISOString();
    let due = this.#db
      .selectFrom('alert_notifications')
      .select('id')
      .where('status', 'in', ['pending', 'processing'])
      .where('next_attempt_at', '<=', now.toISOString())
      .orderBy('next_attempt_at')
      .limit(CLAIM_BATCH);
    if (this.#postgres) due = due.forUpdate().skipLocked();
    return this.#db
      .with('due', () => due)
      .updateTable('alert_notifications')
      .set({ status: 'processing', next_attempt_at: lease })
      .where('id', 'in', (eb) => eb.selectFrom('due').select('id'))
      .returningAll()
      .execute();
  }

  async #send(row: {
    id: string;
    account_id: string;
    type: string;
    body: string;
    attempts: number;
    next_attempt_at: string | null;
  }) {
    const settings = await this.#db
      .selectFrom('alert_settings')
      .select(['endpoint_url', 'secret'])
      .where('account_id', '=', row.account_id)
      .executeTakeFirst();
    const startedAt = this.#clock.now();
    const attempt = row.attempts + 1;
    let statusCode: number | null = null;
    let error: string | null;
    if (!settings?.endpoint_url) error = 'The account has no alert endpoint any more';
    else {
      const seconds = Math.floor(startedAt.getTime() / 1000);
      const outcome = await this.#http.post({
        url: settings.endpoint_url,
        headers: {
          'user-agent': this.#userAgent,
          'content-type': 'application/json',
          'x-webhook-event': row.type,
          'webhook-id': row.id,
          'webhook-timestamp': String(seconds),
          'webhook-signature': standardWebhookSignature(settings.secret, row.id, seconds, row.body),
        },
        body: row.body,
        timeoutMs: DEFAULT_TIMEOUT_SECONDS * 1000,
      });
      statusCode = outcome.statusCode ?? null;
      const success = statusCode !== null && statusCode >= 200 && statusCode < 300;
      error = success ? null : (outcome.error ?? `HTTP ${statusCode}`);
      if (!success && !outcome.blocked && attempt <= DEFAULT_RETRY_ATTEMPTS) {
        const at = new Date(startedAt.getTime() + outcome.durationMs + this.#policy.delayAfter(attempt));
        await this.#record(row, { status: 'pending', attempt, statusCode, error, nextAttemptAt: at.toISOString() });
        this.#retryAt(at);
        return;
      }
    }
    await this.#record(row, {
      status: error === null ? 'success' : 'failed',
      attempt,
      statusCode,
      error,
      nextAttemptAt: null,
    });
    if (error !== null) {
      this.#logger.warn({ notificationId: row.id, accountId: row.account_id, error }, 'alert webhook failed for good');
    }
  }

  async #record(
    row: { id: string; next_attempt_at: string | null },
    outcome: {
      status: 'pending' | 'success' | 'failed';
      attempt: number;
      statusCode: number | null;
      error: string | null;
      nextAttemptAt: string | null;
    },
  ): Promise<void> {
    await this.#db
      .updateTable('alert_notifications')
      .set({
        status: outcome.status,
        attempts: outcome.attempt,
        next_attempt_at: outcome.nextAttemptAt,
        last_status_code: outcome.statusCode,
        last_error: outcome.error,
        updated_at: isoNow(this.#clock),
      })
      .where('id', '=', row.id)
      .where('status', '=', 'processing')
      .where('next_attempt_at', '=', row.next_attempt_at)
      .execute();
  }

  /** Passes again when this process's retry falls due (another process's retries wait for its own timer or a sweep). */
  #retryAt(at: Date): void {
    if (this.#stopped || (this.#retryTimer && this.#retryTimerAt <= at.getTime())) return;
    clearTimeout(this.#retryTimer);
    this.#retryTimerAt = at.getTime();
    this.#retryTimer = setTimeout(
      () => {
        this.#retryTimer = undefined;
        void this.sendDue();
      },
      Math.max(0, at.getTime() - this.#clock.now().getTime()),
    );
    this.#retryTimer.unref();
  }
}
