import { type Insertable, sql, type Transaction } from 'kysely';
import { newId } from '../core/index.ts';
import {
  type Database,
  type DeliveryAttemptsTable,
  type DeliveryStatus,
  insertTables,
  onPostgres,
  preparedQuery,
  textArray,
  toFlag,
} from '../db/index.ts';
import { eventRow, type NewEvent } from '../events/index.ts';
import type { DeliveryFailureObserver, DeliveryJob, FinishedAttempt } from './outbox-store.ts';

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

/** SQLite: the update that moves one job on after an attempt, fenced by its owner; prepared, as it runs for each. */
const finishJob = preparedQuery((db, values: JobOutcome) =>
  db
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
    .returning('id'),
);

/** The members of JobOutcome, in the order the PostgreSQL update takes them as arrays. */
const JOB_OUTCOME_KEYS = [
  'id',
  'owner',
  'status',
  'nextAttemptAt',
  'lastAttemptAt',
  'statusCode',
  'error',
  'responseData',
  'updatedAt',
] as const satisfies readonly (keyof JobOutcome)[];

/**
 * PostgreSQL: the same update for every job of a batch in one statement, each member of JobOutcome one `text[]`
 * parameter (see textArray), so that its text is the same for any number of jobs and it is prepared once.
 */
const finishJobsAtOnce = preparedQuery(
  (db, values: Record<(typeof JOB_OUTCOME_KEYS)[number], Buffer>) => ({
    compile: () =>
      sql<{ id: string }>`update deliveries set status = job.status, attempts = deliveries.attempts + 1,
        next_attempt_at = job.next_attempt_at, lease_owner = null, lease_expires_at = null,
        last_attempt_at = job.last_attempt_at, last_status_code = job.status_code::integer, last_error = job.error,
        response_data = job.response_data, updated_at = job.updated_at
        from unnest(${values.id}::text[], ${values.owner}::text[], ${values.status}::text[],
          ${values.nextAttemptAt}::text[], ${values.lastAttemptAt}::text[], ${values.statusCode}::text[],
          ${values.error}::text[], ${values.responseData}::text[], ${values.updatedAt}::text[])
          as job (id, owner, status, next_attempt_at, last_attempt_at, status_code, error, response_data, updated_at)
        where deliveries.id = job.id and deliveries.lease_owner = job.owner
        returning deliveries.id`.compile(db),
  }),
  { named: true },
);

/** Moves every job on whose lease is still the worker's; returns the ids of those it moved. */
async function finishJobs(trx: Transaction<Database>, jobs: readonly JobOutcome[]): Promise<Set<string>> {
  if (!onPostgres(trx)) {
    const finished = new Set<string>();
    for (const job of jobs) for (const { id } of await finishJob(trx, job)) finished.add(id);
    return finished;
  }
  // While the table grows, before autovacuum analyzes it, PostgreSQL's estimate of its size lags far behind, and the
  // planner hash-joined the batch to a scan of every delivery; by primary key each job is one index probe.
  await sql`set local enable_seqscan = off`.execute(trx);
  const arrays = Object.fromEntries(JOB_OUTCOME_KEYS.map((key) => [key, textArray(jobs.map((job) => job[key]))]));
  const rows = await finishJobsAtOnce(trx, arrays as Record<(typeof JOB_OUTCOME_KEYS)[number], Buffer>);
  return new Set(rows.map(({ id }) => id));
}

/** What recording an attempt did. */
export type AttemptRecorded =
  /** Wrote it; `toldFailure`: told `failures` of the failed end. */
  | { recorded: true; toldFailure: boolean }
  /** Wrote nothing: its delivery is gone, its email erased while the attempt was made. */
  | { recorded: false };

/**
 * Records finished attempts in one transaction, each as its own unit of work: its job moved on, fenced by its owner;
 * its log row and event, also when the lease was lost; its failed end told to `failures` when the job was still
 * leased to this worker; nothing at all when its delivery no longer exists. On PostgreSQL each table's writes are one
 * statement whatever the number of attempts: a transaction costs five round trips, where one statement per attempt
 * made each attempt a commit of its own.
 */
export async function recordAttempts(
  trx: Transaction<Database>,
  batch: readonly FinishedAttempt[],
  failures: DeliveryFailureObserver | undefined,
): Promise<AttemptRecorded[]> {
  const writes = batch.map(attemptWrites);
  const moved = await finishJobs(
    trx,
    writes.map(({ job }) => job),
  );
  const leaseLost = writes.filter(({ job }) => !moved.has(job.id)).map(({ job }) => job.id);
  const kept = leaseLost.length > 0 ? await deliveriesKept(trx, leaseLost) : new Set<string>();
  const exists = (id: string) => moved.has(id) || kept.has(id);
  const recorded = writes.filter(({ job }) => exists(job.id));
  await insertTables(trx, [
    { table: 'delivery_attempts', rows: recorded.map(({ attempt }) => attempt) },
    { table: 'events', rows: recorded.map(({ event, endedAt }) => eventRow(event, endedAt)) },
  ]);
  const outcomes: AttemptRecorded[] = [];
  for (const [index, { job, result, attempt, targetName }] of batch.entries()) {
    if (!exists(job.id)) outcomes.push({ recorded: false });
    else if (!moved.has(job.id) || result.status !== 'failed' || !failures) {
      outcomes.push({ recorded: true, toldFailure: false });
    } else {
      await failures.failed(trx, {
        accountId: job.account_id,
        deliveryId: job.id,
        emailId: job.email_id,
        targetType: job.target_type,
        targetId: job.target_id,
        targetName,
        endpointDeactivated: result.endpointDeactivated === true,
        attempts: writes[index]!.attempt.attempt,
        statusCode: attempt.statusCode,
        error: attempt.error,
      });
      outcomes.push({ recorded: true, toldFailure: true });
    }
  }
  return outcomes;
}

/**
 * Which of the deliveries whose fenced update found no row still exist (another worker took their lease over) rather
 * than being erased. PostgreSQL: those rows are then locked against deletion until the commit; on SQLite the
 * transaction holds the write lock since its update.
 */
async function deliveriesKept(trx: Transaction<Database>, ids: readonly string[]): Promise<Set<string>> {
  let query = trx.selectFrom('deliveries').select('id').where('id', 'in', ids);
  if (onPostgres(trx)) query = query.forKeyShare();
  return new Set((await query.execute()).map(({ id }) => id));
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
