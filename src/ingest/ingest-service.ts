import { availableParallelism } from 'node:os';
import type { BlobStore } from '../blobs/index.ts';
import type { DatabaseConfig, SpamdConfig } from '../config/index.ts';
import { type Logger, newId } from '../core/index.ts';
import { isCommitOutcomeUnknown } from '../db/index.ts';
import { type JobLease, MAX_PAYLOAD_BYTES } from '../delivery/index.ts';
import { parseMessage, sanitizeEmailHtml, traceHeader } from '../mime/index.ts';
import { messageFacts, type RuleEvaluator } from '../rules/index.ts';
import { WorkerLost, WorkerPool } from '../workers/index.ts';
import { type Analysis, contentSha256, webhookHtml } from './analysis.ts';
import type { AnalysisRequest, AnalysisWorkerData, SanitizeRequest } from './analysis-worker.ts';
import type { AcceptedRoute, PreparedMessage, RuledRoute, WrittenEmail } from './email-writer.ts';
import { IngestLoad } from './ingest-load.ts';
import { createSpamScanner } from './spamd.ts';
import type { RawResolver, VerdictChecker } from './verdicts.ts';
import type { WriteRequest, WriterThreadData } from './writer-thread.ts';

/** One message as SMTP received it, with the route decided for each accepted recipient. */
export interface IncomingMessage {
  /**
   * The DATA bytes as received (dot-unstuffed), in order: the one copy of the message in memory. The blocks are
   * views of SharedArrayBuffers, so the analysis worker reads them without a copy.
   */
  raw: readonly Buffer[];
  mailFrom: string | null;
  helo: string | null;
  clientIp: string;
  clientHostname: string | null;
  /**
   * How it came, for the Received header's `with`: `SMTP` (HELO), `ESMTP` (EHLO), `ESMTPS` (after STARTTLS), or
   * `UTF8SMTP`/`UTF8SMTPS` (with SMTPUTF8).
   */
  protocol: string;
  recipients: AcceptedRoute[];
  /** When the end of DATA arrived. */
  receivedAt: Date;
  /**
   * How long the connection was idle between its previous message's reply and this message's MAIL FROM, null for
   * its first: a sender with more mail queued begins the next at once (see IngestLoad).
   */
  senderIdleMs: number | null;
}

export interface IngestResult {
  queueId: string;
  emails: WrittenEmail[];
  /** Where the message's ingest time went (see IngestStageSeconds). */
  stageSeconds: IngestStageSeconds;
}

/**
 * How long each stage of one message's ingest took, in seconds: its raw bytes written to the blob store, and at the
 * same time its analysis (parse and verdicts, with the trip to a worker and back); its accounts' rules; and its write
 * (waiting for its group commit, then the transaction). Each includes waiting for its turn, which is where a busy
 * machine's time goes.
 */
export interface IngestStageSeconds {
  blob: number;
  analysis: number;
  rules: number;
  write: number;
}

/** The stages of IngestStageSeconds, in the order the metrics list them. */
export const INGEST_STAGES = ['blob', 'analysis', 'rules', 'write'] as const satisfies ReadonlyArray<
  keyof IngestStageSeconds
>;

/** Seconds since `start` (a performance.now() reading). */
const secondsSince = (start: number) => (performance.now() - start) / 1000;

export interface IngestDependencies {
  /** Ingest writes through connections of its own, on a writer thread (see writer-thread.ts). */
  database: DatabaseConfig;
  blobs: BlobStore;
  /** Used by inline analysis (analysisWorkers 0); workers build their own resolver from `dnsServers`. */
  resolveDns: RawResolver;
  dnsServers: string[];
  /** SpamAssassin's spamd, asked for each message's spam verdict; unset reports the verdict as DISABLED. */
  spamd?: SpamdConfig;
  /**
   * Worker threads that parse and compute verdicts; 0 runs them on the event loop. Defaults to one fewer than the
   * CPUs (at least one): the event loop and the writer thread keep about a core busy between them, and a worker with
   * work queued sleeps and wakes less than two half-idle ones.
   */
  analysisWorkers?: number;
  logger: Logger;
  /** The host name written into Received: and Authentication-Results:. */
  mxHost: string;
  /** Runs each recipient's account rules and blocklist on the analysed message, before the writer stores it. */
  rules: Pick<RuleEvaluator, 'evaluate'>;
  /**
   * Asked as each message arrives: a lease to insert its delivery jobs with, already leased to this process's
   * delivery worker, which `onCommitted`'s listener then hands them to; undefined inserts them pending, and then the
   * message's HTML is not sanitized here, since whoever claims the jobs sanitizes it anyway.
   */
  newJobLease?: () => JobLease | undefined;
}

/** Young generations of ingest's threads: parsing makes most of their garbage, the writer's is mostly short rows. */
const ANALYSIS_YOUNG_GENERATION_MB = 24;
const WRITER_YOUNG_GENERATION_MB = 12;

/** The operating system's names for ingest's threads (see WorkerPool); the ingest bench reports CPU by them. */
export const INGEST_THREAD_NAMES = { analysis: 'ingest-analysis', writer: 'ingest-writer' } as const;

/** The message's copies its deliveries can use: its HTML sanitized for webhooks, and its bytes as stored. */
export interface CommittedCopies {
  sanitizedHtml: string | undefined;
  /** Views of SMTP's buffers, which later mail reuses once the listener returns: a listener keeps a copy. */
  raw: readonly Buffer[];
}

/**
 * Told of each commit's newly stored emails (with the jobs queued for them, and each email as stored when its jobs
 * were leased), and the message's HTML sanitized for webhook bodies when a route sends it to one (see webhookHtml).
 */
export type CommittedListener = (emails: WrittenEmail[], copies: CommittedCopies) => void;

/** Where a message's raw bytes go: its blob store answers with the key to read them by. */
function blobNameFor(queueId: string, at: Date): string {
  const day = at.toISOString().slice(0, 10).replaceAll('-', '/');
  return `raw/${day}/${queueId}.eml`;
}

/**
 * The ingest pipeline: raw bytes to the blob store (durable), parse and verdicts alongside, then one transaction
 * with the email rows, their threads and their delivery jobs. It returns only after that commit, so a caller that
 * acknowledges on return never acknowledges what could be lost.
 */
export function createIngestService(deps: IngestDependencies) {
  // Loaded by inline analysis alone: with workers, mailauth stays out of the event loop's heap.
  let inlineVerdicts: Promise<VerdictChecker> | undefined;
  const verdictChecker = () =>
    (inlineVerdicts ??= import('./verdicts.ts').then(({ createVerdictChecker }) =>
      createVerdictChecker(deps.resolveDns, deps.spamd && createSpamScanner(deps.spamd)),
    ));
  const workers = deps.analysisWorkers ?? Math.max(1, availableParallelism() - 1);
  const pool =
    workers > 0
      ? new WorkerPool<AnalysisRequest | SanitizeRequest, Analysis | string>(
          new URL('./analysis-worker.ts', import.meta.url),
          workers,
          {
            dnsServers: deps.dnsServers,
            mxHost: deps.mxHost,
            spamd: deps.spamd,
            webhookHtmlMaxChars: MAX_PAYLOAD_BYTES,
          } satisfies AnalysisWorkerData,
          INGEST_THREAD_NAMES.analysis,
          ANALYSIS_YOUNG_GENERATION_MB,
        )
      : null;
  const writer = new WorkerPool<WriteRequest, WrittenEmail[]>(
    new URL('./writer-thread.ts', import.meta.url),
    1,
    { database: deps.database } satisfies WriterThreadData,
    INGEST_THREAD_NAMES.writer,
    WRITER_YOUNG_GENERATION_MB,
  );

  async function analyze(message: IncomingMessage, trace: Buffer, jobLease: JobLease | undefined): Promise<Analysis> {
    const request = {
      clientIp: message.clientIp,
      helo: message.helo ?? '',
      mailFrom: message.mailFrom ?? '',
    };
    // A rule may still route a copy to a webhook; its job then sanitizes the HTML itself.
    const routedToWebhook =
      jobLease !== undefined &&
      message.recipients.some(
        ({ target }) => target.kind === 'webhook' || (target.kind === 'endpoint' && target.endpointType === 'webhook'),
      );
    // The trace header crosses as text: a small Buffer is a view of Node's shared 8 KiB allocation pool, and posting
    // a view copies the whole pool with it.
    if (pool) {
      return pool.request({
        chunks: message.raw,
        traceHeader: trace.toString('latin1'),
        routedToWebhook,
        ...request,
      }) as Promise<Analysis>;
    }
    const checkVerdicts = await verdictChecker();
    const [parsed, verdicts] = await Promise.all([
      parseMessage(message.raw),
      checkVerdicts({ chunks: message.raw, traceHeader: trace, ...request, mta: deps.mxHost }),
    ]);
    return {
      parsed,
      verdicts,
      contentSha256: contentSha256(message.raw),
      sanitizedHtml: webhookHtml(parsed, routedToWebhook, MAX_PAYLOAD_BYTES),
    };
  }
  /** Each recipient with what its account's rules decided: they see the envelope, the parsed message and verdicts. */
  function applyRules(message: IncomingMessage, analysis: Analysis): Promise<RuledRoute[]> {
    const { parsed, verdicts } = analysis;
    return Promise.all(
      message.recipients.map(async (route) => {
        const facts = messageFacts({
          mailFrom: message.mailFrom,
          fromAddress: parsed.from?.addresses[0]?.address ?? null,
          recipient: route.recipient,
          subject: parsed.subject,
          headers: parsed.headers,
          attachmentCount: parsed.attachments.length,
          verdicts,
        });
        return { ...route, rules: await deps.rules.evaluate(route.accountId, facts) };
      }),
    );
  }

  const listeners = new Set<CommittedListener>();

  const load = new IngestLoad();

  async function ingest(message: IncomingMessage): Promise<IngestResult> {
    load.entered(message.senderIdleMs);
    try {
      return await store(message);
    } finally {
      load.left();
    }
  }

  /**
   * Set when a blob that no row may refer to was left in the store (its delete failed, or its write may have
   * committed after all): then drain() cannot vouch for the blob store, and the next start looks for orphans.
   */
  let blobLeftBehind = false;

  /** Deletes the blob of a message that no row will refer to; a failure is logged, and the blob stays unreferenced. */
  async function discardBlob(blobKey: string): Promise<void> {
    await deps.blobs.delete(blobKey).catch((error) => {
      blobLeftBehind = true;
      deps.logger.warn({ err: error, blobKey }, 'blob cleanup');
    });
  }

  async function store(message: IncomingMessage): Promise<IngestResult> {
    const jobLease = deps.newJobLease?.();
    const queueId = newId('msg', message.receivedAt.getTime());
    const trace = traceHeader({
      mailFrom: message.mailFrom,
      queueId,
      helo: message.helo,
      clientHostname: message.clientHostname,
      clientIp: message.clientIp,
      protocol: message.protocol,
      mxHost: deps.mxHost,
      recipients: message.recipients.map((route) => route.recipient),
      at: message.receivedAt,
    });

    const raw = [trace, ...message.raw];
    const started = performance.now();
    const stageSeconds: IngestStageSeconds = { blob: 0, analysis: 0, rules: 0, write: 0 };
    // Both are waited for even when one fails, so that the blob of a message refused here is deleted at once, not left
    // (referenced by nothing) until the next start's recovery.
    const [put, analysis] = await Promise.allSettled([
      deps.blobs.put(blobNameFor(queueId, message.receivedAt), raw).finally(() => {
        stageSeconds.blob = secondsSince(started);
      }),
      analyze(message, trace, jobLease).finally(() => {
        stageSeconds.analysis = secondsSince(started);
      }),
    ]);
    if (put.status === 'rejected') throw put.reason;
    const { key: blobKey, size: rawSize } = put.value;
    if (analysis.status === 'rejected') {
      await discardBlob(blobKey);
      throw analysis.reason;
    }
    let recipients: RuledRoute[];
    const rulesStarted = performance.now();
    try {
      recipients = await applyRules(message, analysis.value);
    } catch (error) {
      await discardBlob(blobKey);
      throw error;
    }
    stageSeconds.rules = secondsSince(rulesStarted);
    // The sanitized HTML stays here, for the delivery worker: the writer has no use for it.
    const { sanitizedHtml, ...analyzed } = analysis.value;
    const prepared: PreparedMessage = {
      queueId,
      blobKey,
      rawSize,
      mailFrom: message.mailFrom,
      helo: message.helo,
      clientIp: message.clientIp,
      recipients,
      receivedAt: message.receivedAt,
      jobLease,
      ...analyzed,
    };

    let emails: WrittenEmail[];
    const writeStarted = performance.now();
    try {
      emails = await writer.request({ message: prepared, othersComing: load.inFlight > 1 });
    } catch (error) {
      if (error instanceof WorkerLost || isCommitOutcomeUnknown(error)) {
        // The rows may have been committed, and they would refer to this blob: it stays (a committed row always has
        // its blob), and the next start's orphan search removes it if no row does.
        blobLeftBehind = true;
        deps.logger.warn({ blobKey, queueId }, 'write outcome unknown: blob kept for recovery');
      } else await discardBlob(blobKey);
      throw error;
    }
    stageSeconds.write = secondsSince(writeStarted);
    const fresh = emails.filter((email) => !email.duplicate);
    // A retried copy already stored for a recipient is named apart: nothing new was stored for it.
    deps.logger.info(
      {
        queueId,
        emailIds: fresh.map((email) => email.id),
        duplicateIds: emails.filter((email) => email.duplicate).map((email) => email.id),
        size: rawSize,
        recipients: emails.map((email) => email.recipient),
        messageId: analysis.value.parsed.messageId,
      },
      'message stored',
    );
    if (fresh.length === 0) {
      // Every recipient already had this copy; the new blob is referenced by nothing.
      await discardBlob(blobKey);
    } else {
      for (const listener of listeners) {
        try {
          listener(fresh, { sanitizedHtml, raw });
        } catch (error) {
          deps.logger.error({ err: error }, 'onCommitted listener failed');
        }
      }
    }
    return { queueId, emails, stageSeconds };
  }

  /** Set once drain() has begun: the analysis workers are closing. */
  let draining = false;

  return {
    ingest,
    /**
     * Sanitizes HTML as a webhook body carries it, on an analysis worker: for a delivery job that was claimed, whose
     * message's analysis did not (see newJobLease). During a drain, on the event loop.
     */
    cleanHtml: (html: string): Promise<string> =>
      pool && !draining
        ? (pool.request({ sanitize: html }) as Promise<string>)
        : Promise.resolve(sanitizeEmailHtml(html)),
    /** Whether senders queue up for their 250 (see IngestLoad): delivery then leaves the CPU to ingest for a while. */
    saturated: () => load.saturated(),
    /**
     * Calls `listener` after each commit with the emails it newly stored (duplicates left out), e.g. to hand their
     * delivery jobs to the delivery worker in-process. Returns a function that removes the listener.
     */
    onCommitted(listener: CommittedListener): () => void {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    /**
     * Waits until every queued transaction has committed, then stops the workers (used on shutdown). Resolves to
     * whether every message taken in was settled by then (stored, or refused with its blob deleted): false when one
     * was still on its way, e.g. a session SMTP cut off at its close timeout, or when a blob was left behind.
     */
    async drain(): Promise<boolean> {
      draining = true;
      await writer.idle();
      await writer.close();
      await pool?.close();
      return load.inFlight === 0 && !blobLeftBehind;
    },
  };
}

export type IngestService = ReturnType<typeof createIngestService>;
