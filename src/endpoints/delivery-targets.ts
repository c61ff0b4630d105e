import type { Clock } from '../core/index.ts';
import { isoNow, randomHex } from '../core/index.ts';
import type { Db, DeliveriesTable } from '../db/index.ts';
import { fromFlag, preparedQuery } from '../db/index.ts';
import { DEFAULT_RETRY_ATTEMPTS, DEFAULT_TIMEOUT_SECONDS, type EndpointType } from './endpoint-config.ts';
import { signingPreviousSecret } from './secret-rotation.ts';

interface TargetBase {
  id: string;
  accountId: string;
  name: string;
  isActive: boolean;
  retryAttempts: number;
}

export interface WebhookTarget extends TargetBase {
  kind: 'webhook';
  /** A legacy `webhooks` row rather than an endpoint of type webhook. */
  legacy: boolean;
  url: string;
  secret?: string;
  /** The secret `secret` replaced, while deliveries are signed with both (see secret-rotation.ts). */
  previousSecret?: string;
  headers: Record<string, string>;
  timeoutMs: number;
  verificationToken: string;
}

export interface ForwardTarget extends TargetBase {
  kind: 'forward';
  endpointType: 'email' | 'email_group';
  recipients: string[];
  includeAttachments: boolean;
  subjectPrefix?: string;
  fromAddress?: string;
  senderName?: string;
}

export type DeliveryTarget = WebhookTarget | ForwardTarget;

function stringMap(value: unknown): Record<string, string> {
  if (!value || typeof value !== 'object' || Array.isArray(value)) return {};
  return Object.fromEntries(
    Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined && v !== null)
      .map(([k, v]) => [k, String(v)]),
  );
}

function numberOr(value: unknown, fallback: number): number {
  return typeof value === 'number' && Number.isFinite(value) ? value : fallback;
}

function optionalString(value: unknown): string | undefined {
  return typeof value === 'string' && value.trim() !== '' ? value : undefined;
}

// Each target query below runs for every message routed or job delivered, and finds one row by its id: named, so
// that PostgreSQL parses and plans it once per connection (see preparedQuery).
const endpointState = preparedQuery(
  (db, { id, accountId }: { id: string; accountId: string }) =>
    db.selectFrom('endpoints').select(['type', 'is_active']).where('id', '=', id).where('account_id', '=', accountId),
  { named: true },
);
const webhookState = preparedQuery(
  (db, { id, accountId }: { id: string; accountId: string }) =>
    db.selectFrom('webhooks').select('is_active').where('id', '=', id).where('account_id', '=', accountId),
  { named: true },
);

const verifiedDomain = preparedQuery((db, { accountId, domain }: { accountId: string; domain: string }) =>
  db
    .selectFrom('domains')
    .select('id')
    .where('account_id', '=', accountId)
    .where('domain', '=', domain)
    .where('status', '=', 'verified'),
);

/** Whether `domain` is a verified domain of the account: one a forward may be sent from (`fromAddress`). */
export async function isVerifiedDomain(db: Db, accountId: string, domain: string): Promise<boolean> {
  return (await verifiedDomain(db, { accountId, domain })).length > 0;
}

/** What a delivery reads of its target, for each job (see DeliveryTargets.load). */
const endpointRow = preparedQuery(
  (db, { id, accountId }: { id: string; accountId: string }) =>
    db
      .selectFrom('endpoints')
      .select([
        'id',
        'account_id',
        'name',
        'type',
        'config',
        'is_active',
        'previous_secret',
        'previous_secret_expires_at',
      ])
      .where('id', '=', id)
      .where('account_id', '=', accountId),
  { named: true },
);
const webhookRow = preparedQuery(
  (db, { id, accountId }: { id: string; accountId: string }) =>
    db.selectFrom('webhooks').selectAll().where('id', '=', id).where('account_id', '=', accountId),
  { named: true },
);

/** The type of the account's endpoint if it is active, read in the caller's transaction (ingest's). */
export async function activeEndpointType(db: Db, accountId: string, id: string): Promise<EndpointType | undefined> {
  const [endpoint] = await endpointState(db, { id, accountId });
  return endpoint?.is_active ? endpoint.type : undefined;
}

/** Whether the account's legacy webhook exists and is active, read in the caller's transaction (ingest's). */
export async function isActiveWebhook(db: Db, accountId: string, id: string): Promise<boolean> {
  const [webhook] = await webhookState(db, { id, accountId });
  return Boolean(webhook?.is_active);
}

/**
 * Reads the endpoint or legacy webhook a delivery job points at, in the form the senders need. Endpoint configs are
 * the spec's table (webhook url/secret/headers/timeout/retryAttempts + verificationToken; email forwardTo; email_group
 * emails). An endpoint created before it had a verification token gets one on its first delivery, as Inbound does.
 */
export class DeliveryTargets {
  private readonly db: Db;
  private readonly clock: Clock;

  constructor(db: Db, clock: Clock) {
    this.db = db;
    this.clock = clock;
  }

  async load(
    job: Pick<DeliveriesTable, 'account_id' | 'target_type' | 'target_id'>,
  ): Promise<DeliveryTarget | undefined> {
    return job.target_type === 'webhook'
      ? this.loadLegacyWebhook(job.account_id, job.target_id)
      : this.loadEndpoint(job.account_id, job.target_id);
  }

  async loadEndpoint(accountId: string, id: string): Promise<DeliveryTarget | undefined> {
    const [row] = await endpointRow(this.db, { id, accountId });
    if (!row) return undefined;
    const config = JSON.parse(row.config) as Record<string, unknown>;
    const base = {
      id: row.id,
      accountId: row.account_id,
      name: row.name,
      isActive: fromFlag(row.is_active),
      retryAttempts: numberOr(config.retryAttempts, DEFAULT_RETRY_ATTEMPTS),
    };
    if (row.type === 'webhook') {
      const secret = optionalString(config.secret);
      return {
        ...base,
        kind: 'webhook',
        legacy: false,
        url: String(config.url ?? ''),
        secret,
        previousSecret: secret && signingPreviousSecret(row, this.clock.now()),
        headers: stringMap(config.headers),
        timeoutMs: numberOr(config.timeout, DEFAULT_TIMEOUT_SECONDS) * 1000,
        verificationToken: await this.endpointToken(row.id, config),
      };
    }
    const recipients =
      row.type === 'email'
        ? [optionalString(config.forwardTo) ?? optionalString(config.email)].filter((a): a is string => Boolean(a))
        : Array.isArray(config.emails)
          ? config.emails.filter((a): a is string => typeof a === 'string')
          : [];
    return {
      ...base,
      kind: 'forward',
      endpointType: row.type,
      recipients,
      includeAttachments: config.includeAttachments !== false,
      subjectPrefix: optionalString(config.subjectPrefix),
      fromAddress: await this.ownFromAddress(row.account_id, optionalString(config.fromAddress)),
      senderName: optionalString(config.senderName),
    };
  }

  /**
   * A forward's `fromAddress` while its domain is still a verified domain of the account, as when it was configured.
   * A domain deleted since may be another account's now, which must not be sent as: the receiving address sends then.
   */
  private async ownFromAddress(accountId: string, address: string | undefined): Promise<string | undefined> {
    if (!address) return undefined;
    const domain = address.slice(address.lastIndexOf('@') + 1).toLowerCase();
    return (await isVerifiedDomain(this.db, accountId, domain)) ? address : undefined;
  }

  /**
   * The receiving address an endpoint test sends a forward from, as a real forward would: an active address routed to
   * the endpoint, else `test@` a domain whose catch-all it is, else `test@` any of the account's domains; each on a
   * verified domain. Undefined when the account has no verified domain.
   */
  async testRecipient(accountId: string, endpointId: string): Promise<string | undefined> {
    const routed = await this.db
      .selectFrom('email_addresses')
      .innerJoin('domains', 'domains.id', 'email_addresses.domain_id')
      .select('email_addresses.address')
      .where('email_addresses.account_id', '=', accountId)
      .where('email_addresses.endpoint_id', '=', endpointId)
      .where('email_addresses.is_active', '=', 1)
      .where('domains.status', '=', 'verified')
      .orderBy('email_addresses.address')
      .executeTakeFirst();
    if (routed) return routed.address;
    const domain = await this.db
      .selectFrom('domains')
      .select('domain')
      .where('account_id', '=', accountId)
      .where('status', '=', 'verified')
      .orderBy((eb) => eb.case().when('catch_all_endpoint_id', '=', endpointId).then(0).else(1).end())
      .orderBy('domain')
      .executeTakeFirst();
    return domain ? `test@${domain.domain}` : undefined;
  }

  private async loadLegacyWebhook(accountId: string, id: string): Promise<WebhookTarget | undefined> {
    const [row] = await webhookRow(this.db, { id, accountId });
    if (!row) return undefined;
    return {
      kind: 'webhook',
      legacy: true,
      id: row.id,
      accountId: row.account_id,
      name: row.name,
      isActive: fromFlag(row.is_active),
      retryAttempts: row.retry_attempts,
      url: row.url,
      secret: row.secret ?? undefined,
      previousSecret: row.secret ? signingPreviousSecret(row, this.clock.now()) : undefined,
      headers: row.headers ? stringMap(JSON.parse(row.headers)) : {},
      timeoutMs: row.timeout * 1000,
      verificationToken: row.verification_token,
    };
  }

  private async endpointToken(id: string, config: Record<string, unknown>): Promise<string> {
    const existing = optionalString(config.verificationToken);
    if (existing) return existing;
    const token = randomHex(32);
    await this.db
      .updateTable('endpoints')
      .set({
        config: JSON.stringify({ ...config, verificationToken: token }),
        updated_at: isoNow(this.clock),
      })
      .where('id', '=', id)
      .execute();
    return token;
  }

  /** Whether the account has an endpoint or a legacy webhook with this id. */
  async exists(accountId: string, id: string): Promise<boolean> {
    const [endpoint, webhook] = await Promise.all([
      this.db
        .selectFrom('endpoints')
        .select('id')
        .where('id', '=', id)
        .where('account_id', '=', accountId)
        .executeTakeFirst(),
      this.db
        .selectFrom('webhooks')
        .select('id')
        .where('id', '=', id)
        .where('account_id', '=', accountId)
        .executeTakeFirst(),
    ]);
    return Boolean(endpoint || webhook);
  }

  /** Turns a target off for good (410 Gone), keeping the reason visible on it. */
  async deactivate(target: DeliveryTarget, reason: string): Promise<void> {
    const now = isoNow(this.clock);
    const table = target.kind === 'webhook' && target.legacy ? 'webhooks' : 'endpoints';
    await this.db
      .updateTable(table)
      .set({ is_active: 0, deactivated_reason: reason, updated_at: now })
      .where('id', '=', target.id)
      .execute();
  }
}
