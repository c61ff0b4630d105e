import { sql, type Transaction } from 'kysely';
import { newId } from '../core/index.ts';
import type { Database, EmailsTable, ThreadsTable } from '../db/index.ts';
import { insertTables, onPostgres, preparedQuery } from '../db/index.ts';
import { type DeliveryJob, deliveryJobRow, type JobLease, type JobTarget } from '../delivery/index.ts';
import { activeEndpointType, isActiveWebhook } from '../endpoints/index.ts';
import { eventRow, type NewEvent } from '../events/index.ts';
import { type StoredEmail, toEmailRow, toStoredEmail } from '../mail/index.ts';
import type { RouteDecision } from '../routing/index.ts';
import type { RuleOutcome } from '../rules/index.ts';
import { postgresSearchVectors } from '../search/index.ts';
import type { Analysis } from './analysis.ts';
import { addToThread, latest, placeInThread, threadingMessageIds } from './threading.ts';

export type AcceptedRoute = Extract<RouteDecision, { accepted: true }>;

/** An accepted recipient with what the account's rules decided for its copy (see src/rules). */
export type RuledRoute = AcceptedRoute & { rules: RuleOutcome };

/** Everything ingest knows about one message before the transaction that stores it: its envelope and its analysis. */
export interface PreparedMessage extends Analysis {
  queueId: string;
  blobKey: string;
  /** Size of the stored blob (with our trace header). */
  rawSize: number;
  mailFrom: string | null;
  helo: string | null;
  clientIp: string | null;
  recipients: RuledRoute[];
  receivedAt: Date;
  /** Inserts the delivery jobs already leased to this process's delivery worker; without it they are pending. */
  jobLease?: JobLease;
}

export interface WrittenEmail {
  id: string;
  recipient: string;
  /** The account it was stored for. */
  accountId: string;
  /** The domain it arrived at (null for `postmaster` without one), and the address (null when the catch-all took it). */
  domainId: string | null;
  addressId: string | null;
  /** True when an earlier copy was found and nothing new was stored for this recipient. */
  duplicate: boolean;
  /** The delivery jobs queued for it, as inserted. */
  deliveries: DeliveryJob[];
  /**
   * The email as stored, when its jobs were inserted leased to this process's worker: handed to it with them, so
   * that it need not read the row back.
   */
  stored?: StoredEmail;
}

function arrival(route: RuledRoute) {
  return {
    recipient: route.recipient,
    accountId: route.accountId,
    domainId: route.domainId,
    addressId: route.addressId,
  };
}

/** A retried copy (same recipient, Message-ID and bytes) arriving within this window is stored once. */
const DEDUPE_WINDOW_MS = 24 * 3600 * 1000;

/** What retriedCopy compares a stored copy by. */
const COPY_COLUMNS = ['id', 'account_id', 'recipient', 'raw_sha256', 'received_at'] as const;
type StoredCopy = Pick<EmailsTable, (typeof COPY_COLUMNS)[number]>;

/**
 * The account's stored emails with any of the given Message-IDs, and their threads: one lookup that serves both the
 * check for a retried copy (the new email's own Message-ID) and threading (the ones it replies to, and its own). The
 * account's Message-ID index finds the few of them; without ORDER BY, so that the planner keeps to that index.
 */
const storedByMessageId = preparedQuery((db, { accountId, messageIds }: { accountId: string; messageIds: string[] }) =>
  db
    .selectFrom('emails')
    .leftJoin('threads', 'threads.id', 'emails.thread_id')
    .select([
      ...COPY_COLUMNS.map((column) => `emails.${column}` as const),
      'emails.message_id',
      'emails.thread_id',
      'threads.message_count',
    ])
    .where('emails.account_id', '=', accountId)
    .where('emails.message_id', 'in', messageIds),
);
/** Without a Message-ID a retried copy can only be found by recipient and content (see migration 0012). */
const copiesWithoutMessageId = preparedQuery((db, { recipient, sha256 }: { recipient: string; sha256: string }) =>
  db
    .selectFrom('emails')
    .select(COPY_COLUMNS)
    .where('message_id', 'is', null)
    .where('recipient', '=', recipient)
    .where('raw_sha256', '=', sha256),
);

/** A copy of `message` already stored for `route` within the dedupe window, among `candidates`. */
function retriedCopy(candidates: readonly StoredCopy[], message: PreparedMessage, route: AcceptedRoute) {
  const since = new Date(message.receivedAt.getTime() - DEDUPE_WINDOW_MS).toISOString();
  // A copy stored for another account (the domain has moved since) is that account's, not a retry of this mail.
  return candidates.find(
    (copy) =>
      copy.account_id === route.accountId &&
      copy.recipient === route.recipient &&
      copy.raw_sha256 === message.contentSha256 &&
      copy.received_at >= since,
  );
}

/**
 * The job target a recipient's copy queues for: none when a rule blocked it, the endpoint a rule routed it to, else
 * its route's target; null as well when that routes nowhere or is switched off. `active` keeps each target's state
 * for the rest of the batch (one transaction).
 */
async function jobTarget(
  trx: Transaction<Database>,
  route: RuledRoute,
  active: Map<string, Promise<JobTarget | null>>,
): Promise<JobTarget | null> {
  if (route.rules.blocked) return null;
  const { accountId, target } = route;
  const endpointId = route.rules.routeTo ?? (target.kind === 'endpoint' ? target.endpointId : null);
  const webhookId = !endpointId && target.kind === 'webhook' ? target.webhookId : null;
  const key = endpointId
    ? `endpoint:${accountId}:${endpointId}`
    : webhookId
      ? `webhook:${accountId}:${webhookId}`
      : null;
  if (!key) return null;
  let state = active.get(key);
  if (!state) {
    state = endpointId
      ? activeEndpointType(trx, accountId, endpointId).then((endpointType) =>
          endpointType ? { targetType: 'endpoint', targetId: endpointId, endpointType } : null,
        )
      : isActiveWebhook(trx, accountId, webhookId!).then((isActive) =>
          isActive ? { targetType: 'webhook', targetId: webhookId! } : null,
        );
    active.set(key, state);
  }
  return state;
}

/**
 * PostgreSQL's search vector of each recipient's row of `message` (see migration 0005 for the fields), from the
 * first row: subject, sender and body come from the message, so every row of it has the same.
 */
function searchVectors(message: PreparedMessage, first: EmailsTable): (row: EmailsTable) => string {
  const vectorFor = postgresSearchVectors({
    subject: first.subject ?? '',
    sender: `${first.from_name ?? ''} ${first.from_address ?? ''}`,
    body: first.text_body ?? '',
  });
  const { to, cc, bcc } = message.parsed;
  const headerRecipients = [to?.text ?? '', cc?.text ?? '', bcc?.text ?? ''].join(' ');
  return (row) => vectorFor(`${row.recipient} ${headerRecipients}`);
}

/**
 * PostgreSQL: a transaction lock per account and Message-ID the batch looks up, taken in one order, so that another
 * process storing the same message at once (a sender retrying at another MX) waits for this commit and then finds
 * the copy, rather than both reading none and storing it twice.
 */
async function lockMessageIds(trx: Transaction<Database>, idsByAccount: Map<string, Set<string>>): Promise<void> {
  const keys = [...idsByAccount].flatMap(([accountId, ids]) => [...ids].map((id) => `${accountId} ${id}`));
  if (keys.length === 0) return;
  await sql`select pg_advisory_xact_lock(k) from (select distinct hashtextextended(key, 0) as k from unnest(${keys}::text[]) as key order by k) as locks`.execute(
    trx,
  );
}

/** A stored email that ingest's lookups can find: read from the database, or stored earlier in this batch. */
type StoredRow = StoredCopy & Pick<EmailsTable, 'message_id' | 'thread_id'> & { message_count: number | null };

/**
 * What one batch (one transaction) reads once and writes at its end: the stored emails with its messages' Message-IDs,
 * the rows to insert, and the threads' new message counts. A message sees what the batch's earlier messages stored,
 * as if each had been written on its own.
 */
class Batch {
  readonly stored: StoredRow[] = [];
  readonly threads: ThreadsTable[] = [];
  /** Existing threads joined in this batch: their new message count and time. */
  readonly threadUpdates = new Map<string, { position: number; now: string }>();
  readonly emails: EmailsTable[] = [];
  readonly deliveries: DeliveryJob[] = [];
  readonly events: NewEvent[] = [];
  readonly targets = new Map<string, Promise<JobTarget | null>>();

  /** Reads the stored emails of each account with any of the Message-IDs its messages look up, in one query each. */
  async read(trx: Transaction<Database>, messages: readonly PreparedMessage[]): Promise<void> {
    const idsByAccount = new Map<string, Set<string>>();
    for (const message of messages) {
      const ids = threadingMessageIds(message.parsed);
      if (ids.length === 0) continue;
      for (const route of message.recipients) {
        const set = idsByAccount.get(route.accountId) ?? new Set();
        for (const id of ids) set.add(id);
        idsByAccount.set(route.accountId, set);
      }
    }
    const postgres = onPostgres(trx);
    if (postgres) await lockMessageIds(trx, idsByAccount);
    for (const [accountId, ids] of idsByAccount) {
      this.stored.push(...(await storedByMessageId(trx, { accountId, messageIds: [...ids] })));
    }
    if (postgres) await this.lockThreads(trx);
  }

  /**
   * PostgreSQL: locks the threads the batch may join, in id order as the eraser does, and takes their message counts
   * again. Another process may have added to one since the read above, or be adding now: positions then follow its
   * count rather than repeat it, and a thread erased meanwhile is gone here too (its joiner starts a new one).
   */
  private async lockThreads(trx: Transaction<Database>): Promise<void> {
    const ids = [...new Set(this.stored.flatMap((row) => (row.thread_id ? [row.thread_id] : [])))].sort();
    if (ids.length === 0) return;
    const rows = await trx
      .selectFrom('threads')
      .select(['id', 'message_count'])
      .where('id', 'in', ids)
      .orderBy('id')
      .forUpdate()
      .execute();
    const counts = new Map(rows.map((row) => [row.id, row.message_count]));
    for (const row of this.stored) if (row.thread_id !== null) row.message_count = counts.get(row.thread_id) ?? null;
  }

  /** The account's stored emails with any of `messageIds`, each with its thread's current message count. */
  known(accountId: string, messageIds: readonly string[]): StoredRow[] {
    if (messageIds.length === 0) return [];
    return this.withCounts(
      this.stored.filter(
        (row) => row.account_id === accountId && row.message_id !== null && messageIds.includes(row.message_id),
      ),
    );
  }

  /** `rows`, each with its thread's message count as this batch has left it. */
  withCounts(rows: readonly StoredRow[]): StoredRow[] {
    return rows.map((row) => {
      const position = row.thread_id === null ? undefined : this.threadCount(row.thread_id);
      return position === undefined ? row : { ...row, message_count: position };
    });
  }

  private threadCount(threadId: string): number | undefined {
    return (
      this.threadUpdates.get(threadId)?.position ?? this.threads.find((thread) => thread.id === threadId)?.message_count
    );
  }

  /** Puts a new email into its thread: a new thread's row, or the joined thread's new count. */
  joinThread(placement: ReturnType<typeof placeInThread>, now: string): void {
    if (placement.newThread) {
      this.threads.push(placement.newThread);
      return;
    }
    const created = this.threads.find((thread) => thread.id === placement.threadId);
    if (created) {
      const last = latest(created.last_message_at, now);
      Object.assign(created, { message_count: placement.position, last_message_at: last, updated_at: last });
    } else {
      const last = latest(this.threadUpdates.get(placement.threadId)?.now, now);
      this.threadUpdates.set(placement.threadId, { position: placement.position, now: last });
    }
  }

  async write(trx: Transaction<Database>): Promise<void> {
    for (const [id, { position, now }] of this.threadUpdates) await addToThread(trx, { id, position, now });
    const createdAt = new Date().toISOString();
    await insertTables(trx, [
      { table: 'threads', rows: this.threads },
      { table: 'emails', rows: this.emails },
      { table: 'deliveries', rows: this.deliveries },
      { table: 'events', rows: this.events.map((event) => eventRow(event, createdAt)) },
    ]);
  }
}

/**
 * Stores a batch of messages inside the caller's transaction: per accepted recipient an email row in its thread, and
 * a pending delivery job for each active endpoint or webhook the recipient routes to (the outbox), and an
 * `email.received` event per stored email. It reads the Message-IDs it needs once and writes every table's rows
 * together (see insertTables): on PostgreSQL in one statement, as each statement is a round trip.
 */
export async function writeMessages(
  trx: Transaction<Database>,
  messages: readonly PreparedMessage[],
): Promise<WrittenEmail[][]> {
  const batch = new Batch();
  await batch.read(trx, messages);
  const written: WrittenEmail[][] = [];
  for (const message of messages) written.push(await placeMessage(trx, batch, message));
  await batch.write(trx);
  return written;
}

/** Places one message's rows in the batch, as writeMessages says. */
async function placeMessage(
  trx: Transaction<Database>,
  batch: Batch,
  message: PreparedMessage,
): Promise<WrittenEmail[]> {
  const now = new Date().toISOString();
  const postgres = onPostgres(trx);
  // Built at the first row that needs one: a message whose every copy was stored before needs none.
  let searchVector: ((row: EmailsTable) => string) | undefined;
  const written: WrittenEmail[] = [];
  const { messageId } = message.parsed;
  const threadingIds = threadingMessageIds(message.parsed);
  // This message's rows stored for its earlier recipients: an account's copies share a thread, and without a
  // Message-ID no lookup finds them.
  const copies: StoredRow[] = [];
  for (const route of message.recipients) {
    const known = [
      ...batch.known(route.accountId, threadingIds),
      ...(messageId ? [] : batch.withCounts(copies.filter((copy) => copy.account_id === route.accountId))),
    ];
    const duplicate = retriedCopy(
      messageId
        ? known.filter((stored) => stored.message_id === messageId)
        : [
            ...(await copiesWithoutMessageId(trx, { recipient: route.recipient, sha256: message.contentSha256 })),
            ...batch.emails.filter((row) => row.message_id === null),
          ],
      message,
      route,
    );
    if (duplicate) {
      written.push({ id: duplicate.id, ...arrival(route), duplicate: true, deliveries: [] });
      continue;
    }
    const id = newId('email', message.receivedAt.getTime());
    const row = toEmailRow({
      id,
      accountId: route.accountId,
      domainId: route.domainId,
      addressId: route.addressId,
      recipient: route.recipient,
      mailFrom: message.mailFrom,
      helo: message.helo,
      clientIp: message.clientIp,
      parsed: message.parsed,
      rawBlobKey: message.blobKey,
      rawSize: message.rawSize,
      rawSha256: message.contentSha256,
      verdicts: message.verdicts,
      ruleMatches: route.rules.matches,
      processingMs: Math.max(0, Date.now() - message.receivedAt.getTime()),
      receivedAt: message.receivedAt.toISOString(),
      createdAt: now,
    });
    const thread = placeInThread(
      { id, accountId: route.accountId, messageId, subject: message.parsed.subject },
      known,
      row.received_at,
    );
    batch.joinThread(thread, row.received_at);
    row.thread_id = thread.threadId;
    row.thread_position = thread.position;
    if (postgres) {
      searchVector ??= searchVectors(message, row);
      row.search_vector = searchVector(row);
    }
    batch.emails.push(row);
    const stored = { ...row, message_count: null };
    batch.stored.push(stored);
    copies.push(stored);

    const deliveries: DeliveryJob[] = [];
    const target = await jobTarget(trx, route, batch.targets);
    if (target) {
      deliveries.push(deliveryJobRow({ accountId: route.accountId, emailId: id, target }, now, message.jobLease));
    }
    batch.deliveries.push(...deliveries);
    written.push({
      id,
      ...arrival(route),
      duplicate: false,
      deliveries,
      ...(message.jobLease && deliveries.length > 0 ? { stored: toStoredEmail(row) } : {}),
    });
    batch.events.push({
      accountId: route.accountId,
      type: 'email.received',
      data: {
        emailId: id,
        messageId: row.message_id,
        from: row.from_address,
        subject: row.subject,
        recipient: route.recipient,
        receivedAt: row.received_at,
      },
    });
  }
  return written;
}
