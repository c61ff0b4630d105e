import type { Insertable, QueryCreator, Transaction } from 'kysely';
import { newId } from '../core/index.ts';
import {
  type Database,
  type Db,
  type DeliveryAttemptsTable,
  type DeliveryStatus,
  type EventsTable,
  insertRow,
  onPostgres,
  type PreparedValue,
  preparedQuery,
  toFlag,
} from '../db/index.ts';
import { appendEvents, eventRow, type NewEvent } from '../events/index.ts';
import type { DeliveryFailureObserver, DeliveryJob, FinishedAttempt } from './outbox-store.ts';

/**
 * PostgreSQL: records `finished` by one statement of its own (see attemptAtOnce); resolves to false, having written
 * nothing, when its delivery is gone (its email was erased while the attempt was made).
 */
export async function recordAttemptAtOnce(db: Db, finished: FinishedAttempt): Promise<boolean> {
  const { job, attempt, event, endedAt } = attemptWrites(finished);
  try {
    await attemptAtOnce(db, {
      ...job,
      ...prefixed(attempt, 'attempt.'),
      ...prefixed(eventRow(event, endedAt), 'event.'),
    });
    return true;
  } catch (error) {
    // The attempt's foreign key checks, under a lock an erase waits for, that the delivery still exists; failing it,
    // the statement wrote nothing.
    if (isMissingDelivery(error)) return false;
    throw error;
  }
}

function isMissingDelivery(error: unknown): boolean {
  const { code, constraint } = error as { code?: unknown; constraint?: unknown };
  return code === '23503' && constraint === 'delivery_attempts_delivery_id_fkey';
}

/** A job's state after an attempt, and the worker whose lease fences it. */
type JobOutcome = {
  id: string;
  owner: string;
  status: string;
  nextAttemptAt: string | null;
  lastAttemptAt: string;
  statusCode: number | null;
  error: string | null;
  responseData: string;
  updatedAt: string;
};

/** What recording one attempt writes: the job's new state, the attempt's log row and its event. */
interface AttemptWrites {
  job: JobOutcome;
  attempt: Required<Insertable<DeliveryAttemptsTable>>;
  event: NewEvent;
  /** When the attempt ended, by the worker's clock: the job's update time and the event's. */
  endedAt: string;
}

function attemptWrites({ job, owner, attempt, result }: FinishedAttempt): AttemptWrites {
  const now = new Date(attempt.startedAt.getTime() + attempt.durationMs).toISOString();
  const nextAttemptAt = result.status === 'retry' ? result.at.toISOString() : null;
  const responseData = {
    responseCode: attempt.statusCode,
    responseBody: attempt.responseBody,
    deliveryTime: attempt.durationMs,
    url: attempt.url,
    error: attempt.error,
    ...(attempt.recipients ? { recipients: attempt.recipients } : {}),
    deliveredAt: result.status === 'success' ? now : null,
    // Which process made the attempt (host:pid:random), to trace work across a cluster.
    worker: owner,
    ...attempt.details,
  };
  // Only the lease's owner counts a job's attempts (a requeue leaves a job in flight alone): the number the fenced
  // update gives this one, and the number it is logged with when the lease was lost.
  const attemptNumber = job.attempts + 1;
  return {
    job: {
      id: job.id,
      owner,
      status: result.status === 'retry' ? 'pending' : result.status,
      nextAttemptAt,
      lastAttemptAt: attempt.startedAt.toISOString(),
      statusCode: attempt.statusCode,
      error: attempt.error,
      responseData: JSON.stringify(responseData),
      updatedAt: now,
    },
    attempt: {
      id: newId('dla'),
      delivery_id: job.id,
      attempt: attemptNumber,
      started_at: attempt.startedAt.toISOString(),
      duration_ms: attempt.durationMs,
      success: toFlag(attempt.success),
      status_code: attempt.statusCode,
      response_body: attempt.responseBody,
      error: attempt.error,
      url: attempt.url,
      recipients: attempt.recipients ? JSON.stringify(attempt.recipients) : null,
    },
    event: deliveryEvent(job, {
      attempt: attemptNumber,
      success: attempt.success,
      statusCode: attempt.statusCode,
      error: attempt.error,
      nextAttemptAt,
    }),
    endedAt: now,
  };
}

/** The update that moves a job on after an attempt, fenced by its owner. */
function updateJob(db: QueryCreator<Database>, values: JobOutcome) {
  return db
    .updateTable('deliveries')
    .set((eb) => ({
      status: values.status as DeliveryStatus,
      attempts: eb('attempts', '+', 1),
      next_attempt_at: values.nextAttemptAt,
      lease_owner: null,
      lease_expires_at: null,
      last_attempt_at: values.lastAttemptAt,
      last_status_code: values.statusCode,
      last_error: values.error,
      response_data: values.responseData,
      updated_at: values.updatedAt,
    }))
    .where('id', '=', values.id)
    .where('lease_owner', '=', values.owner)
    .returning('id');
}

/** Prepared, as it runs for every attempt recorded in a transaction. */
const finishJob = preparedQuery((db, values: JobOutcome) => updateJob(db, values));

/**
 * PostgreSQL: an attempt's three writes in one statement, committed on its own. In a transaction an attempt costs five
 * round trips (BEGIN, three statements, COMMIT), and there the attempts' batches stay near one attempt. SQLite writes
 * only in a statement's main clause, and its statements cost no round trip.
 */
const attemptAtOnce = preparedQuery(
  (db, values: JobOutcome & Record<`attempt.${string}` | `event.${string}`, PreparedValue>) =>
    db
      .with('finished', (qc) => updateJob(qc, values))
      .with('logged', (qc) =>
        qc
          .insertInto('delivery_attempts')
          .values(unprefixed(values, 'attempt.') as Insertable<DeliveryAttemptsTable>)
          .returning('id'),
      )
      .insertInto('events')
      .values(unprefixed(values, 'event.') as Insertable<EventsTable>),
  { named: true },
);

/** `row`'s columns named `prefix` + column, as a prepared query's values. */
function prefixed(row: Record<string, PreparedValue>, prefix: string): Record<string, PreparedValue> {
  return Object.fromEntries(Object.entries(row).map(([column, value]) => [`${prefix}${column}`, value]));
}

/** The values named `prefix` + column, as a row. */
function unprefixed(values: Record<string, PreparedValue>, prefix: string): Record<string, PreparedValue> {
  return Object.fromEntries(
    Object.entries(values)
      .filter(([key]) => key.startsWith(prefix))
      .map(([key, value]) => [key.slice(prefix.length), value]),
  );
}

/** What recording an attempt in a transaction did. */
export type AttemptRecorded =
  /** Wrote it; `toldFailure`: told `failures` of the failed end. */
  | { recorded: true; toldFailure: boolean }
  /** Wrote nothing: its delivery is gone, its email erased while the attempt was made. */
  | { recorded: false };

/**
 * One attempt's unit of work in a transaction: its writes (attemptWrites) and a failed end told to `failures` when the
 * job was still leased to this worker; nothing when its delivery no longer exists.
 */
export async function recordAttempt(
  trx: Transaction<Database>,
  finished: FinishedAttempt,
  failures: DeliveryFailureObserver | undefined,
): Promise<AttemptRecorded> {
  const writes = attemptWrites(finished);
  const [updated] = await finishJob(trx, writes.job);
  if (!updated && !(await deliveryKept(trx, writes.job.id))) return { recorded: false };
  await insertRow(trx, 'delivery_attempts', writes.attempt);
  await appendEvents(trx, [writes.event], writes.endedAt);
  const { job, result, attempt, targetName } = finished;
  if (!updated || result.status !== 'failed' || !failures) return { recorded: true, toldFailure: false };
  await failures.failed(trx, {
    accountId: job.account_id,
    deliveryId: job.id,
    emailId: job.email_id,
    targetType: job.target_type,
    targetId: job.target_id,
    targetName,
    endpointDeactivated: result.endpointDeactivated === true,
    attempts: writes.attempt.attempt,
    statusCode: attempt.statusCode,
    error: attempt.error,
  });
  return { recorded: true, toldFailure: true };
}

/**
 * Whether a delivery whose fenced update found no row still exists (another worker took its lease over) rather than
 * being erased. PostgreSQL: the row is then locked against deletion until the commit; on SQLite the transaction holds
 * the write lock since its update.
 */
async function deliveryKept(trx: Transaction<Database>, id: string): Promise<boolean> {
  let query = trx.selectFrom('deliveries').select('id').where('id', '=', id);
  if (onPostgres(trx)) query = query.forKeyShare();
  return (await query.executeTakeFirst()) !== undefined;
}

/** The event reporting one attempt on a job (or its end without one: `attempt` null). */
export function deliveryEvent(
  job: DeliveryJob,
  outcome: {
    attempt: number | null;
    success: boolean;
    statusCode: number | null;
    error: string | null;
    nextAttemptAt: string | null;
  },
): NewEvent {
  return {
    accountId: job.account_id,
    type: outcome.success ? 'delivery.succeeded' : 'delivery.failed',
    data: {
      deliveryId: job.id,
      emailId: job.email_id,
      ...(job.target_type === 'endpoint' ? { endpointId: job.target_id } : { webhookId: job.target_id }),
      attempt: outcome.attempt,
      statusCode: outcome.statusCode,
      error: outcome.error,
      ...(outcome.success ? {} : { final: outcome.nextAttemptAt === null, nextAttemptAt: outcome.nextAttemptAt }),
    },
  };
}
