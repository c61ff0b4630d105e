import type { Transaction } from 'kysely';
import { newId } from '../core/index.ts';
import type { Database, EmailsTable } from '../db/index.ts';
import { onPostgres } from '../db/index.ts';
import { type DeliveryJob, deliveryJobRow, type JobLease, type JobTarget } from '../delivery/index.ts';
import { activeEndpointType, isActiveWebhook } from '../endpoints/index.ts';
import { type StoredEmail, toEmailRow, toStoredEmail } from '../mail/index.ts';
import type { RouteDecision } from '../routing/index.ts';
import type { RuleOutcome } from '../rules/index.ts';
import { postgresSearchVectors } from '../search/index.ts';
import type { Analysis } from './analysis.ts';
import { copiesWithoutMessageId, retriedCopy } from './retried-copy.ts';
import { placeInThread, threadingMessageIds } from './threading.ts';
import { Batch, type StoredRow } from './write-batch.ts';

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
