import { PostgresAdapter, type Transaction } from 'kysely';
import { newId } from '../core/index.ts';
import { type Database, type EmailsTable, insertRow, preparedQuery } from '../db/index.ts';
import { type DeliveryJob, insertDeliveryJob, type JobLease, type JobTarget } from '../delivery/index.ts';
import { activeEndpointType, isActiveWebhook } from '../endpoints/index.ts';
import { appendEvents, type NewEvent } from '../events/index.ts';
import { type StoredEmail, toEmailRow, toStoredEmail } from '../mail/index.ts';
import type { RouteDecision } from '../routing/index.ts';
import type { RuleOutcome } from '../rules/index.ts';
import { postgresSearchVectors } from '../search/index.ts';
import type { Analysis } from './analysis.ts';
import { placeInThread, threadingMessageIds } from './threading.ts';

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
  /** The domain it arrived at, and the address (null when the catch-all took it). */
  domainId: string;
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
export const DEDUPE_WINDOW_MS = 24 * 3600 * 1000;

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
 * its route's target; null as well when that routes nowhere or is switched off.
 */
async function jobTarget(trx: Transaction<Database>, route: RuledRoute): Promise<JobTarget | null> {
  if (route.rules.blocked) return null;
  const target = route.target;
  const endpointId = route.rules.routeTo ?? (target.kind === 'endpoint' ? target.endpointId : null);
  if (endpointId) {
    const endpointType = await activeEndpointType(trx, route.accountId, endpointId);
    return endpointType ? { targetType: 'endpoint', targetId: endpointId, endpointType } : null;
  }
  if (target.kind === 'webhook') {
    const active = await isActiveWebhook(trx, route.accountId, target.webhookId);
    return active ? { targetType: 'webhook', targetId: target.webhookId } : null;
  }
  return null;
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
 * Stores one message inside the caller's transaction: per accepted recipient an email row in its thread, and a
 * pending delivery job for each active endpoint or webhook the recipient routes to (the outbox), and an
 * `email.received` event per stored email.
 */
export async function writeMessage(trx: Transaction<Database>, message: PreparedMessage): Promise<WrittenEmail[]> {
  const now = new Date().toISOString();
  const postgres = trx.getExecutor().adapter instanceof PostgresAdapter;
  // Built at the first row that needs one: a message whose every copy was stored before needs none.
  let searchVector: ((row: EmailsTable) => string) | undefined;
  const written: WrittenEmail[] = [];
  const events: NewEvent[] = [];
  const { messageId } = message.parsed;
  const threadingIds = threadingMessageIds(message.parsed);
  for (const route of message.recipients) {
    // Read per recipient: an earlier recipient's row, stored just now in this transaction, is one of them.
    const known =
      threadingIds.length === 0
        ? []
        : await storedByMessageId(trx, { accountId: route.accountId, messageIds: threadingIds });
    const duplicate = retriedCopy(
      messageId
        ? known.filter((stored) => stored.message_id === messageId)
        : await copiesWithoutMessageId(trx, { recipient: route.recipient, sha256: message.contentSha256 }),
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
    const thread = await placeInThread(
      trx,
      { id, accountId: route.accountId, messageId, subject: message.parsed.subject },
      known,
      row.received_at,
    );
    row.thread_id = thread.threadId;
    row.thread_position = thread.position;
    if (postgres) {
      searchVector ??= searchVectors(message, row);
      row.search_vector = searchVector(row);
    }
    await insertRow(trx, 'emails', row);

    const deliveries: DeliveryJob[] = [];
    const target = await jobTarget(trx, route);
    if (target) {
      deliveries.push(
        await insertDeliveryJob(trx, { accountId: route.accountId, emailId: id, target }, now, message.jobLease),
      );
    }
    written.push({
      id,
      ...arrival(route),
      duplicate: false,
      deliveries,
      ...(message.jobLease && deliveries.length > 0 ? { stored: toStoredEmail(row) } : {}),
    });
    events.push({
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
  await appendEvents(trx, events);
  return written;
}
