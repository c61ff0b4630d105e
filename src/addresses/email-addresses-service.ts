import {
  type Clock,
  Conflict,
  Invalid,
  isoNow,
  NotFound,
  newId,
  type Page,
  withinAddressLength,
} from '../core/index.ts';
import { type Db, type DomainsTable, type EmailAddressesTable, fromFlag, onPostgres, toFlag } from '../db/index.ts';
import { type EndpointType, holdRoutingTarget, type RoutingTarget } from '../endpoints/index.ts';
import { normalizeAddress } from './address-name.ts';

/** How addresses find the account's endpoints and webhooks they route to (other accounts' are absent). */
export interface RoutingTargetDirectory {
  endpoints(accountId: string, ids: string[]): Promise<Map<string, RoutingTarget>>;
  webhooks(accountId: string, ids: string[]): Promise<Map<string, RoutingTarget>>;
}

export interface AddressRouting {
  type: 'endpoint' | 'webhook' | 'none';
  id: string | null;
  name: string | null;
  config: Record<string, unknown> | null;
  isActive: boolean;
  endpointType: EndpointType | null;
}

export interface EmailAddress {
  id: string;
  accountId: string;
  address: string;
  domainId: string;
  endpointId: string | null;
  webhookId: string | null;
  isActive: boolean;
  /** Whether the SMTP receiver accepts mail for the address right now: derived, never stored. */
  isReceiptRuleConfigured: boolean;
  domain: { id: string; name: string; status: DomainsTable['status'] };
  routing: AddressRouting;
  /** Why the address cannot receive yet; null when it can. */
  warning: string | null;
  createdAt: string;
  updatedAt: string;
}

export interface AddressListQuery {
  limit: number;
  offset: number;
  domainId?: string;
  isActive?: boolean;
  isReceiptRuleConfigured?: boolean;
}

export interface AddressCreate {
  address?: unknown;
  domainId?: unknown;
  endpointId?: string | null;
  webhookId?: string | null;
  isActive?: boolean;
}

export interface AddressUpdate {
  endpointId?: string | null;
  webhookId?: string | null;
  isActive?: boolean;
}

/** The format the original service accepts; anything stricter would refuse addresses its users already have. */
const ADDRESS_FORMAT = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;

type Row = EmailAddressesTable & { domain_name: string; domain_status: DomainsTable['status'] };

function isUniqueViolation(error: unknown): boolean {
  const e = error as { code?: string; message?: string };
  return e.code === '23505' || /UNIQUE constraint failed/i.test(e.message ?? '');
}

/** An empty routing id names no target: it means none, as the same field left blank in a form does. */
function emptyAsNone<T extends { endpointId?: string | null; webhookId?: string | null }>(ids: T): T {
  return {
    ...ids,
    ...(ids.endpointId === '' ? { endpointId: null } : {}),
    ...(ids.webhookId === '' ? { webhookId: null } : {}),
  };
}

function receives(row: Row): boolean {
  return fromFlag(row.is_active) && row.domain_status === 'verified';
}

function warningFor(row: Row): string | null {
  if (row.domain_status !== 'verified') {
    return `Domain ${row.domain_name} is not verified yet: mail to this address will be rejected until it is`;
  }
  if (!fromFlag(row.is_active)) return 'Email address is inactive: mail to it is rejected until it is activated again';
  return null;
}

/** Checks the targets an address is given and keeps them until `trx`, which stores the references, commits. */
async function holdTargets(trx: Db, accountId: string, ids: { endpointId?: string | null; webhookId?: string | null }) {
  if (ids.endpointId && !(await holdRoutingTarget(trx, accountId, 'endpoints', ids.endpointId))) {
    throw new NotFound('Endpoint not found or access denied');
  }
  if (ids.webhookId && !(await holdRoutingTarget(trx, accountId, 'webhooks', ids.webhookId))) {
    throw new NotFound('Webhook not found or access denied');
  }
}

/**
 * Whether the account's domain an address is about to be stored under is still there, kept from deletion until
 * `trx` commits: a delete under way is waited for and then finds the address (PostgreSQL: a key-share lock, which
 * the delete's row lock excludes; SQLite: the transaction holds the write lock).
 */
async function holdDomain(trx: Db, accountId: string, domainId: string): Promise<boolean> {
  let query = trx.selectFrom('domains').select('id').where('id', '=', domainId).where('account_id', '=', accountId);
  if (onPostgres(trx)) query = query.forKeyShare();
  return (await query.executeTakeFirst()) !== undefined;
}

export class EmailAddressesService {
  private readonly db: Db;
  private readonly clock: Clock;
  private readonly targets: RoutingTargetDirectory;

  constructor(deps: { db: Db; clock: Clock; targets: RoutingTargetDirectory }) {
    this.db = deps.db;
    this.clock = deps.clock;
    this.targets = deps.targets;
  }

  async list(accountId: string, query: AddressListQuery): Promise<Page<EmailAddress>> {
    let base = this.selectRows().where('email_addresses.account_id', '=', accountId);
    if (query.domainId) base = base.where('email_addresses.domain_id', '=', query.domainId);
    if (query.isActive !== undefined) base = base.where('email_addresses.is_active', '=', toFlag(query.isActive));
    if (query.isReceiptRuleConfigured === true) {
      base = base.where('email_addresses.is_active', '=', 1).where('domains.status', '=', 'verified');
    } else if (query.isReceiptRuleConfigured === false) {
      base = base.where((eb) =>
        eb.or([eb('email_addresses.is_active', '=', 0), eb('domains.status', '!=', 'verified')]),
      );
    }
    const [rows, count] = await Promise.all([
      base
        .selectAll('email_addresses')
        .select(['domains.domain as domain_name', 'domains.status as domain_status'])
        .orderBy('email_addresses.id', 'desc')
        .limit(query.limit)
        .offset(query.offset)
        .execute(),
      base.select((eb) => eb.fn.countAll().as('n')).executeTakeFirstOrThrow(),
    ]);
    return { items: await this.present(accountId, rows), total: Number(count.n) };
  }

  /** The account's active addresses on verified domains (those that receive mail), with since when each receives. */
  async receiving(accountId: string): Promise<Array<{ id: string; address: string; since: string }>> {
    const rows = await this.db
      .selectFrom('email_addresses')
      .innerJoin('domains', 'domains.id', 'email_addresses.domain_id')
      .select([
        'email_addresses.id',
        'email_addresses.address',
        'email_addresses.activated_at',
        'email_addresses.created_at',
        'domains.verified_at',
      ])
      .where('email_addresses.account_id', '=', accountId)
      .where('email_addresses.is_active', '=', 1)
      .where('domains.status', '=', 'verified')
      .orderBy('email_addresses.id')
      .execute();
    // It receives from when it was switched on, or from when its domain was verified if that came later.
    return rows.map((row) => ({
      id: row.id,
      address: row.address,
      since: [row.activated_at ?? row.created_at, row.verified_at ?? ''].sort().at(-1)!,
    }));
  }

  async get(accountId: string, id: string): Promise<EmailAddress> {
    const [address] = await this.present(accountId, [await this.ownedRow(accountId, id)]);
    return address!;
  }

  async create(accountId: string, given: AddressCreate): Promise<EmailAddress> {
    const input = emptyAsNone(given);
    const missing = [
      ...(typeof input.address === 'string' && input.address.trim() !== '' ? [] : ['address']),
      ...(typeof input.domainId === 'string' && input.domainId !== '' ? [] : ['domainId']),
    ];
    if (missing.length > 0) throw new Invalid('Missing required fields', { required: missing });
    const parts = normalizeAddress(input.address as string);
    if (!parts || !ADDRESS_FORMAT.test(parts.address) || !withinAddressLength(parts.address)) {
      throw new Invalid('Invalid email address format');
    }
    const { address } = parts;
    const domain = await this.db
      .selectFrom('domains')
      .select(['id', 'domain'])
      .where('id', '=', input.domainId as string)
      .where('account_id', '=', accountId)
      .executeTakeFirst();
    if (!domain) throw new NotFound('Domain not found or access denied');
    if (parts.domain !== domain.domain) {
      throw new Invalid(`Email address must belong to domain ${domain.domain}`);
    }
    if (input.endpointId && input.webhookId) throw new Invalid('Cannot specify both endpoint and webhook');

    const now = isoNow(this.clock);
    const id = newId('addr');
    try {
      await this.db.transaction().execute(async (trx) => {
        if (!(await holdDomain(trx, accountId, domain.id))) throw new NotFound('Domain not found or access denied');
        await holdTargets(trx, accountId, input);
        const existing = await trx
          .selectFrom('email_addresses')
          .select('id')
          .where('address', '=', address)
          .executeTakeFirst();
        if (existing) throw new Conflict('Email address already exists');
        await trx
          .insertInto('email_addresses')
          .values({
            id,
            account_id: accountId,
            domain_id: domain.id,
            address,
            endpoint_id: input.endpointId ?? null,
            webhook_id: input.webhookId ?? null,
            is_active: toFlag(input.isActive ?? true),
            activated_at: (input.isActive ?? true) ? now : null,
            created_at: now,
            updated_at: now,
          })
          .execute();
      });
    } catch (error) {
      if (isUniqueViolation(error)) throw new Conflict('Email address already exists');
      throw error;
    }
    return this.get(accountId, id);
  }

  async update(accountId: string, id: string, given: AddressUpdate): Promise<EmailAddress> {
    const update = emptyAsNone(given);
    const row = await this.ownedRow(accountId, id);
    if (update.endpointId && update.webhookId) throw new Invalid('Cannot specify both endpoint and webhook');
    const changes: Partial<EmailAddressesTable> = {};
    // Routing is exclusive: setting one target clears the other; null removes just that one.
    if (update.endpointId !== undefined) {
      changes.endpoint_id = update.endpointId;
      if (update.endpointId) changes.webhook_id = null;
    }
    if (update.webhookId !== undefined) {
      changes.webhook_id = update.webhookId;
      if (update.webhookId) changes.endpoint_id = null;
    }
    const now = isoNow(this.clock);
    if (update.isActive !== undefined) changes.is_active = toFlag(update.isActive);
    if (update.isActive && !fromFlag(row.is_active)) changes.activated_at = now;
    await this.db.transaction().execute(async (trx) => {
      await holdTargets(trx, accountId, update);
      if (Object.keys(changes).length === 0) return;
      await trx
        .updateTable('email_addresses')
        .set({ ...changes, updated_at: now })
        .where('id', '=', row.id)
        .execute();
    });
    return this.get(accountId, id);
  }

  async remove(accountId: string, id: string): Promise<{ address: string; domain: string }> {
    const row = await this.ownedRow(accountId, id);
    // A hold lives on its row: deleting the row would let the mail it keeps expire by a broader period.
    if (fromFlag(row.legal_hold ?? 0)) {
      throw new Conflict(
        `Cannot delete ${row.address}: it is under a legal hold, which keeps its mail. Lift the hold first.`,
        { code: 'LEGAL_HOLD' },
      );
    }
    await this.db.deleteFrom('email_addresses').where('id', '=', row.id).execute();
    return { address: row.address, domain: row.domain_name };
  }

  private selectRows() {
    return this.db.selectFrom('email_addresses').innerJoin('domains', 'domains.id', 'email_addresses.domain_id');
  }

  private async ownedRow(accountId: string, id: string): Promise<Row> {
    const row = await this.selectRows()
      .selectAll('email_addresses')
      .select(['domains.domain as domain_name', 'domains.status as domain_status'])
      .where('email_addresses.id', '=', id)
      .where('email_addresses.account_id', '=', accountId)
      .executeTakeFirst();
    if (!row) throw new NotFound('Email address not found');
    return row;
  }

  private async present(accountId: string, rows: Row[]): Promise<EmailAddress[]> {
    const [endpoints, webhooks] = await Promise.all([
      this.targets.endpoints(
        accountId,
        rows.flatMap((row) => (row.endpoint_id ? [row.endpoint_id] : [])),
      ),
      this.targets.webhooks(
        accountId,
        rows.flatMap((row) => (row.webhook_id ? [row.webhook_id] : [])),
      ),
    ]);
    return rows.map((row) => {
      const endpoint = row.endpoint_id ? endpoints.get(row.endpoint_id) : undefined;
      const webhook = row.webhook_id ? webhooks.get(row.webhook_id) : undefined;
      const target = endpoint ?? webhook;
      return {
        id: row.id,
        accountId: row.account_id,
        address: row.address,
        domainId: row.domain_id,
        endpointId: row.endpoint_id,
        webhookId: row.webhook_id,
        isActive: fromFlag(row.is_active),
        isReceiptRuleConfigured: receives(row),
        domain: { id: row.domain_id, name: row.domain_name, status: row.domain_status },
        routing: {
          type: endpoint ? 'endpoint' : webhook ? 'webhook' : 'none',
          id: target?.id ?? null,
          name: target?.name ?? null,
          config: target?.config ?? null,
          isActive: target?.isActive ?? false,
          endpointType: endpoint?.type ?? null,
        },
        warning: warningFor(row),
        createdAt: row.created_at,
        updatedAt: row.updated_at,
      };
    });
  }
}
