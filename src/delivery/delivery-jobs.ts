import { newId } from '../core/index.ts';
import { type Db, insertRow } from '../db/index.ts';
import type { EndpointType } from '../endpoints/index.ts';

/** What a job delivers to: an endpoint of some type, or a legacy webhook. */
export type JobTarget =
  | { targetType: 'endpoint'; targetId: string; endpointType: EndpointType }
  | { targetType: 'webhook'; targetId: string };

/**
 * Queues a pending job that delivers one email to one target, due now, in the caller's transaction when it is given
 * one: ingest queues a received email's jobs with its rows, the API an email's delivery to another endpoint.
 */
export async function insertDeliveryJob(
  db: Db,
  job: { accountId: string; emailId: string; target: JobTarget },
  now: string,
): Promise<{ id: string; status: 'pending' }> {
  const { target } = job;
  const webhook = target.targetType === 'webhook' || target.endpointType === 'webhook';
  const id = newId('dlv');
  await insertRow(db, 'deliveries', {
    id,
    account_id: job.accountId,
    email_id: job.emailId,
    target_type: target.targetType,
    target_id: target.targetId,
    delivery_type: webhook ? 'webhook' : 'email_forward',
    status: 'pending',
    attempts: 0,
    next_attempt_at: now,
    lease_owner: null,
    lease_expires_at: null,
    last_attempt_at: null,
    last_status_code: null,
    last_error: null,
    response_data: null,
    created_at: now,
    updated_at: now,
  });
  return { id, status: 'pending' };
}
