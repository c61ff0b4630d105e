import type { DeliveriesTable } from '../db/index.ts';

export interface DeliveryStats {
  total: number;
  successful: number;
  failed: number;
  lastDelivery: string | null;
}

export interface RecentDelivery {
  id: string;
  emailId: string;
  deliveryType: DeliveriesTable['delivery_type'];
  status: DeliveriesTable['status'];
  attempts: number;
  lastAttemptAt: string | null;
  responseData: unknown;
  createdAt: string;
}

export const NO_DELIVERIES: DeliveryStats = { total: 0, successful: 0, failed: 0, lastDelivery: null };

/** What endpoints and webhooks show of their deliveries; delivery owns the outbox and answers (app.ts wires it). */
export interface DeliveryHistory {
  stats(targetType: DeliveriesTable['target_type'], targetIds: string[]): Promise<Map<string, DeliveryStats>>;
  recent(targetType: DeliveriesTable['target_type'], targetId: string, limit: number): Promise<RecentDelivery[]>;
}

/** Presents each row with its delivery stats (`NO_DELIVERIES` for a target with none yet), in one query for all. */
export async function withDeliveryStats<Row extends { id: string }, Item>(
  history: DeliveryHistory,
  targetType: DeliveriesTable['target_type'],
  rows: Row[],
  present: (row: Row, stats: DeliveryStats) => Item,
): Promise<Item[]> {
  const stats = await history.stats(
    targetType,
    rows.map((row) => row.id),
  );
  return rows.map((row) => present(row, stats.get(row.id) ?? NO_DELIVERIES));
}
