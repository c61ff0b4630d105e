import { sql } from 'kysely';
import type { Db, DeliveriesTable } from '../db/index.ts';
import type { DeliveryHistory, DeliveryStats, RecentDelivery } from '../endpoints/index.ts';

/** Delivery counts per target, read from the outbox that ingest and the delivery worker fill. */
async function deliveryStats(
  db: Db,
  targetType: DeliveriesTable['target_type'],
  targetIds: string[],
): Promise<Map<string, DeliveryStats>> {
  if (targetIds.length === 0) return new Map();
  const rows = await db
    .selectFrom('deliveries')
    .select([
      'target_id',
      (eb) => eb.fn.countAll().as('total'),
      sql<string | number>`sum(case when status = 'success' then 1 else 0 end)`.as('successful'),
      sql<string | number>`sum(case when status = 'failed' then 1 else 0 end)`.as('failed'),
      (eb) => eb.fn.max('last_attempt_at').as('last_delivery'),
    ])
    .where('target_type', '=', targetType)
    .where('target_id', 'in', targetIds)
    .groupBy('target_id')
    .execute();
  return new Map(
    rows.map((row) => [
      row.target_id,
      {
        total: Number(row.total),
        successful: Number(row.successful),
        failed: Number(row.failed),
        lastDelivery: row.last_delivery ?? null,
      },
    ]),
  );
}

/** The target's most recent deliveries, newest first. */
async function recentDeliveries(
  db: Db,
  targetType: DeliveriesTable['target_type'],
  targetId: string,
  limit: number,
): Promise<RecentDelivery[]> {
  const rows = await db
    .selectFrom('deliveries')
    .selectAll()
    .where('target_type', '=', targetType)
    .where('target_id', '=', targetId)
    .orderBy('created_at', 'desc')
    .orderBy('id', 'desc')
    .limit(limit)
    .execute();
  return rows.map((row) => ({
    id: row.id,
    emailId: row.email_id,
    deliveryType: row.delivery_type,
    status: row.status,
    attempts: row.attempts,
    lastAttemptAt: row.last_attempt_at,
    responseData: row.response_data ? JSON.parse(row.response_data) : null,
    createdAt: row.created_at,
  }));
}

/** Deliveries looked at, newest first, to tell whether a target delivers again. */
const RECENT_FOR_SUCCESS = 20;

/**
 * Whether one of the target's latest deliveries succeeded at or after `since`: a receiver that works again takes the
 * new mail. Only the newest few are read (the target index), however long its history.
 */
export async function deliveredSince(
  db: Db,
  targetType: DeliveriesTable['target_type'],
  targetId: string,
  since: string,
): Promise<boolean> {
  const rows = await db
    .selectFrom('deliveries')
    .select(['status', 'last_attempt_at'])
    .where('target_type', '=', targetType)
    .where('target_id', '=', targetId)
    .orderBy('created_at', 'desc')
    .limit(RECENT_FOR_SUCCESS)
    .execute();
  return rows.some((row) => row.status === 'success' && row.last_attempt_at !== null && row.last_attempt_at >= since);
}

/** What endpoints and webhooks show of their deliveries, read from the outbox. */
export function deliveryHistory(db: Db): DeliveryHistory {
  return {
    stats: (targetType, targetIds) => deliveryStats(db, targetType, targetIds),
    recent: (targetType, targetId, limit) => recentDeliveries(db, targetType, targetId, limit),
  };
}
