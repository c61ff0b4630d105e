import { NotFound, newId } from '../core/index.ts';
import { type Db, insertRow } from '../db/index.ts';
import type { DeliveryTarget, EndpointType } from '../endpoints/index.ts';
import type { StoredEmail } from '../mail/index.ts';
import type { DeliveryJob } from './outbox-store.ts';

/** What a job delivers to: an endpoint of some type, or a legacy webhook. */
export type JobTarget =
  | { targetType: 'endpoint'; targetId: string; endpointType: EndpointType }
  | { targetType: 'webhook'; targetId: string };

/**
 * A job as the worker runs it. When handed over just committed (see DeliveryWorker.take): with the email as stored and
 * its raw message, so that the worker need not read them back, and, when ingest sanitized it already (see
 * buildEmailReceivedPayload), the HTML the webhook body carries. When claimed: with its email and target as read for
 * every job of the claim at once (see JobRunner.readClaimed).
 */
export interface RunnableJob {
  job: DeliveryJob;
  email?: StoredEmail;
  target?: DeliveryTarget;
  sanitizedHtml?: string;
  raw?: readonly Buffer[];
}

/** A delivery worker that takes new jobs leased to it as they are inserted (see DeliveryWorker.newJobLease). */
export interface JobLease {
  owner: string;
  leaseMs: number;
}

/**
 * Queues a job that delivers one email to one target unless the email has one there already (one delivery per email
 * and target), as a request made at the same time may have just inserted: the API queues an email's delivery to
 * another endpoint this way; ingest inserts its jobs' rows (deliveryJobRow) with the email rows of its batch.
 * NotFound when the email is gone, erased since the caller found it.
 */
export async function insertDeliveryJob(
  db: Db,
  job: { accountId: string; emailId: string; target: JobTarget },
  now: string,
): Promise<void> {
  try {
    await insertRow(db, 'deliveries', deliveryJobRow(job, now));
  } catch (error) {
    const { code, message = '' } = error as { code?: string; message?: string };
    if (code === '23505' || /UNIQUE constraint failed/i.test(message)) return;
    if (code === '23503' || /FOREIGN KEY constraint failed/i.test(message)) throw new NotFound('Email not found');
    throw error;
  }
}

/**
 * The row of a job that delivers one email to one target: pending and due now, or, given `lease`, already leased to
 * that worker, which is handed the row after the commit and runs it without claiming it; until its lease runs out,
 * no other worker sees it as due.
 */
export function deliveryJobRow(
  job: { accountId: string; emailId: string; target: JobTarget },
  now: string,
  lease?: JobLease,
): DeliveryJob {
  const { target } = job;
  const webhook = target.targetType === 'webhook' || target.endpointType === 'webhook';
  const leaseExpiresAt = lease ? new Date(Date.parse(now) + lease.leaseMs).toISOString() : null;
  return {
    id: newId('dlv'),
    account_id: job.accountId,
    email_id: job.emailId,
    target_type: target.targetType,
    target_id: target.targetId,
    delivery_type: webhook ? 'webhook' : 'email_forward',
    status: lease ? 'processing' : 'pending',
    attempts: 0,
    // While leased, `next_attempt_at` holds the lease expiry (see OutboxStore.claim).
    next_attempt_at: leaseExpiresAt ?? now,
    lease_owner: lease?.owner ?? null,
    lease_expires_at: leaseExpiresAt,
    last_attempt_at: null,
    last_status_code: null,
    last_error: null,
    response_data: null,
    round_start_attempt: 0,
    created_at: now,
    updated_at: now,
  };
}
