import type { Insertable, QueryCreator, Transaction } from 'kysely';
import { newId } from '../core/index.ts';
import {
  type Database,
  type Db,
  type DeliveryAttemptsTable,
  type DeliveryStatus,
  type EventsTable,
  insertRow,
  type PreparedValue,
  preparedQuery,
} from '../db/index.ts';
import { appendEvents, eventRow, type NewEvent } from '../events/index.ts';
import type { DeliveryFailureObserver, DeliveryJob, FinishedAttempt } from './outbox-store.ts';

/** PostgreSQL: records `finished` by one statement of its own (see attemptAtOnce). */
export async function recordAttemptAtOnce(db: Db, finished: FinishedAttempt): Promise<void> {
  const { job, attempt, event } = attemptWrites(finished);
  await attemptAtOnce(db, {
    ...job,
    ...prefixed(attempt, 'attempt.'),
    ...prefixed(eventRow(event, new Date().toISOString()), 'event.'),
  });
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
      success: attempt.success ? 1 : 0,
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

/**
 * One attempt's unit of work in a transaction: its writes (attemptWrites) and a failed end told to `failures` when the
 * job was still leased to this worker. Resolves to whether it told one.
 */
export async function recordAttempt(
  trx: Transaction<Database>,
  finished: FinishedAttempt,
  failures: DeliveryFailureObserver | undefined,
): Promise<boolean> {
  const writes = attemptWrites(finished);
  const [updated] = await finishJob(trx, writes.job);
  await insertRow(trx, 'delivery_attempts', writes.attempt);
  await appendEvents(trx, [writes.event]);
  const { job, result, attempt, targetName } = finished;
  if (!updated || result.status !== 'failed' || !failures) return false;
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
  return true;
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
