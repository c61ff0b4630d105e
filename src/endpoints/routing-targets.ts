import type { Db } from '../db/index.ts';
import { fromFlag } from '../db/index.ts';

export type EndpointType = 'webhook' | 'email' | 'email_group';

/** An endpoint or legacy webhook in the form an address's `routing` shows it. */
export interface RoutingTarget {
  id: string;
  name: string;
  /** The endpoint type; null for a legacy webhook. */
  type: EndpointType | null;
  isActive: boolean;
  config: Record<string, unknown>;
}

/** The account's endpoints among `ids`, by id. Other accounts' endpoints are simply absent. */
export async function findEndpointTargets(
  db: Db,
  accountId: string,
  ids: string[],
): Promise<Map<string, RoutingTarget>> {
  if (ids.length === 0) return new Map();
  const rows = await db
    .selectFrom('endpoints')
    .select(['id', 'name', 'type', 'is_active', 'config'])
    .where('account_id', '=', accountId)
    .where('id', 'in', [...new Set(ids)])
    .execute();
  return new Map(
    rows.map((row) => [
      row.id,
      { id: row.id, name: row.name, type: row.type, isActive: fromFlag(row.is_active), config: JSON.parse(row.config) },
    ]),
  );
}

/** The account's legacy webhooks among `ids`, by id, with the webhook fields as their `config`. */
export async function findWebhookTargets(
  db: Db,
  accountId: string,
  ids: string[],
): Promise<Map<string, RoutingTarget>> {
  if (ids.length === 0) return new Map();
  const rows = await db
    .selectFrom('webhooks')
    .selectAll()
    .where('account_id', '=', accountId)
    .where('id', 'in', [...new Set(ids)])
    .execute();
  return new Map(
    rows.map((row) => [
      row.id,
      {
        id: row.id,
        name: row.name,
        type: null,
        isActive: fromFlag(row.is_active),
        config: {
          url: row.url,
          timeout: row.timeout,
          retryAttempts: row.retry_attempts,
          ...(row.headers ? { headers: JSON.parse(row.headers) } : {}),
          ...(row.secret ? { secret: row.secret } : {}),
        },
      },
    ]),
  );
}
