import { type Clock, Invalid, isoNow, NotFound, newId, type Page, randomHex } from '../core/index.ts';
import { type Db, fromFlag, toFlag, type WebhooksTable } from '../db/index.ts';
import type { DnsLookup } from '../dns/index.ts';
import { type DeliveryHistory, type DeliveryStats, NO_DELIVERIES, withDeliveryStats } from './delivery-history.ts';
import { checkDescription, checkName, webhookSettings } from './endpoint-config.ts';
import type { RoutingTarget, TargetServiceDeps } from './endpoints-service.ts';
import { previousSecretAfter } from './secret-rotation.ts';
import { assertPublicUrl } from './url-guard.ts';

/**
 * A legacy webhook: the older routing target behind an address's `webhookId`. Deliveries to it share the outbox
 * with endpoints (`deliveries.target_type = 'webhook'`), so one delivery engine serves both.
 */
export interface Webhook {
  id: string;
  accountId: string;
  name: string;
  url: string;
  secret: string | null;
  headers: Record<string, string> | null;
  timeout: number;
  retryAttempts: number;
  isActive: boolean;
  description: string | null;
  verificationToken: string;
  deliveryStats: DeliveryStats;
  createdAt: string;
  updatedAt: string;
}

export interface WebhookInput {
  name?: string;
  url?: string;
  secret?: string | null;
  headers?: unknown;
  timeout?: number;
  retryAttempts?: number;
  isActive?: boolean;
  description?: string | null;
}

export class WebhooksService {
  private readonly db: Db;
  private readonly clock: Clock;
  private readonly dns: Pick<DnsLookup, 'hostAddresses'>;
  private readonly allowPrivateDestinations: boolean;
  private readonly deliveries: DeliveryHistory;

  constructor(deps: TargetServiceDeps) {
    this.db = deps.db;
    this.clock = deps.clock;
    this.dns = deps.dns;
    this.allowPrivateDestinations = deps.allowPrivateDestinations;
    this.deliveries = deps.deliveries;
  }

  async list(accountId: string, page: { limit: number; offset: number }): Promise<Page<Webhook>> {
    const base = this.db.selectFrom('webhooks').where('account_id', '=', accountId);
    const [rows, count] = await Promise.all([
      base.selectAll().orderBy('id', 'desc').limit(page.limit).offset(page.offset).execute(),
      base.select((eb) => eb.fn.countAll().as('n')).executeTakeFirstOrThrow(),
    ]);
    return {
      items: await withDeliveryStats(this.deliveries, 'webhook', rows, (row, stats) => this.toWebhook(row, stats)),
      total: Number(count.n),
    };
  }

  async get(accountId: string, id: string): Promise<Webhook> {
    const row = await this.ownedRow(accountId, id);
    const stats = await this.deliveries.stats('webhook', [row.id]);
    return this.toWebhook(row, stats.get(row.id) ?? NO_DELIVERIES);
  }

  async create(accountId: string, input: WebhookInput): Promise<Webhook> {
    if (!input.name?.trim() || !input.url) throw new Invalid('Missing required fields', { required: ['name', 'url'] });
    const settings = await this.settings(input);
    const now = isoNow(this.clock);
    const row: WebhooksTable = {
      id: newId('whk'),
      account_id: accountId,
      name: checkName(input.name),
      url: settings.url,
      secret: settings.secret ?? null,
      headers: settings.headers ? JSON.stringify(settings.headers) : null,
      timeout: settings.timeout,
      retry_attempts: settings.retryAttempts,
      is_active: toFlag(input.isActive ?? true),
      description: checkDescription(input.description),
      verification_token: randomHex(32),
      deactivated_reason: null,
      created_at: now,
      updated_at: now,
    };
    await this.db.insertInto('webhooks').values(row).execute();
    return this.toWebhook(row, NO_DELIVERIES);
  }

  /** Changes only the fields sent; null clears `secret`, `headers` and `description`. */
  async update(accountId: string, id: string, input: WebhookInput): Promise<Webhook> {
    const row = await this.ownedRow(accountId, id);
    const settings = await this.settings({
      url: input.url ?? row.url,
      secret: input.secret === undefined ? row.secret : input.secret,
      headers: input.headers === undefined ? (row.headers ? JSON.parse(row.headers) : undefined) : input.headers,
      timeout: input.timeout ?? row.timeout,
      retryAttempts: input.retryAttempts ?? row.retry_attempts,
    });
    const updated = await this.db
      .updateTable('webhooks')
      .set({
        name: input.name === undefined ? row.name : checkName(input.name),
        description: input.description === undefined ? row.description : checkDescription(input.description),
        is_active: input.isActive === undefined ? row.is_active : toFlag(input.isActive),
        deactivated_reason: input.isActive === undefined ? row.deactivated_reason : null,
        url: settings.url,
        secret: settings.secret ?? null,
        ...previousSecretAfter(row.secret, row, settings.secret, this.clock.now()),
        headers: settings.headers ? JSON.stringify(settings.headers) : null,
        timeout: settings.timeout,
        retry_attempts: settings.retryAttempts,
        updated_at: isoNow(this.clock),
      })
      .where('id', '=', row.id)
      .returningAll()
      .executeTakeFirst();
    // Deleted while the settings were checked (the URL's DNS can take seconds).
    if (!updated) throw new NotFound('Webhook not found');
    return this.get(accountId, updated.id);
  }

  /** Deletes the webhook; addresses routed to it become store-only. Its delivery history stays. */
  async remove(accountId: string, id: string): Promise<{ emailAddresses: string[] }> {
    const row = await this.ownedRow(accountId, id);
    return this.db.transaction().execute(async (trx) => {
      // First, so that a reference being stored meanwhile (see holdRoutingTarget) is committed before the clearing.
      await trx.deleteFrom('webhooks').where('id', '=', row.id).execute();
      const addresses = await trx
        .updateTable('email_addresses')
        .set({ webhook_id: null, updated_at: isoNow(this.clock) })
        .where('account_id', '=', accountId)
        .where('webhook_id', '=', row.id)
        .returning('address')
        .execute();
      return { emailAddresses: addresses.map((a) => a.address).sort() };
    });
  }

  /** The account's webhooks among `ids`, by id, with the webhook fields as their `config`. */
  async targets(accountId: string, ids: string[]): Promise<Map<string, RoutingTarget>> {
    if (ids.length === 0) return new Map();
    const rows = await this.db
      .selectFrom('webhooks')
      .selectAll()
      .where('account_id', '=', accountId)
      .where('id', 'in', [...new Set(ids)])
      .execute();
    return new Map(
      rows.map((row) => {
        const webhook = this.toWebhook(row, NO_DELIVERIES);
        return [
          row.id,
          {
            id: row.id,
            name: row.name,
            type: null,
            isActive: webhook.isActive,
            config: {
              url: webhook.url,
              timeout: webhook.timeout,
              retryAttempts: webhook.retryAttempts,
              ...(webhook.headers ? { headers: webhook.headers } : {}),
              ...(webhook.secret ? { secret: webhook.secret } : {}),
            },
          },
        ];
      }),
    );
  }

  private async settings(input: WebhookInput) {
    const settings = webhookSettings({ ...input });
    await assertPublicUrl(settings.url, { allowPrivate: this.allowPrivateDestinations, dns: this.dns });
    return settings;
  }

  private async ownedRow(accountId: string, id: string): Promise<WebhooksTable> {
    const row = await this.db
      .selectFrom('webhooks')
      .selectAll()
      .where('id', '=', id)
      .where('account_id', '=', accountId)
      .executeTakeFirst();
    if (!row) throw new NotFound('Webhook not found');
    return row;
  }

  private toWebhook(row: WebhooksTable, stats: DeliveryStats): Webhook {
    return {
      id: row.id,
      accountId: row.account_id,
      name: row.name,
      url: row.url,
      secret: row.secret,
      headers: row.headers ? JSON.parse(row.headers) : null,
      timeout: row.timeout,
      retryAttempts: row.retry_attempts,
      isActive: fromFlag(row.is_active),
      description: row.description,
      verificationToken: row.verification_token,
      deliveryStats: stats,
      createdAt: row.created_at,
      updatedAt: row.updated_at,
    };
  }
}
