import type { AddressInfo } from 'node:net';
import type { SMTPServerAddress, SMTPServerDataStream, SMTPServerSession } from 'smtp-server';
import { type FixedWindowRateLimiter, isOutage, type Logger } from '../core/index.ts';
import type { AcceptedRoute, IngestService, IngestStageSeconds } from '../ingest/index.ts';
import { REJECT_REASONS, type RecipientRouter, rcptRejection } from '../routing/index.ts';
import { clientKey } from './client-address.ts';
import { EnhancedCodeServer, QUEUED, SHUTTING_DOWN, smtpError } from './enhanced-code-server.ts';
import { parameterRefusal, utf8Refusal } from './esmtp-parameters.ts';
import { SharedBlocks } from './shared-blocks.ts';
import { serverTlsOptions, type TlsFiles, tlsRenewals } from './tls-material.ts';

/** Why the SMTP edge refused a recipient, a message or a connection: a routing reason, or one of its own limits. */
export const SMTP_REFUSAL_REASONS = [
  ...REJECT_REASONS,
  'message_too_large',
  'rate_limited',
  'too_many_connections',
  'server_full',
  'too_slow',
  'too_many_refusals',
  'too_many_errors',
  'connection_timeout',
  'insufficient_storage',
  'temporary_failure',
] as const;
export type SmtpRefusalReason = (typeof SMTP_REFUSAL_REASONS)[number];

/** Recipients per transaction, the least RFC 5321 (4.5.3.1.8) lets a server take; the next get 452 and retry later. */
const MAX_RECIPIENTS = 100;

/** What the SMTP edge reports as it answers (app.ts hands it the metrics' recorder). */
export interface SmtpObserver {
  refused(reason: SmtpRefusalReason): void;
  /** A message answered 250: its DATA size, the time from the end of DATA to the answer, and ingest's share by stage. */
  accepted(bytes: number, ingestSeconds: number, stageSeconds: IngestStageSeconds): void;
}

export interface SmtpReceiverOptions {
  router: RecipientRouter;
  ingest: Pick<IngestService, 'ingest'>;
  logger: Logger;
  /** Our host name, in the greeting and EHLO answer. */
  hostname: string;
  maxMessageBytes: number;
  /** Bytes of messages in progress held at once, over all connections; a message past it gets 452 4.3.1. */
  maxBufferedBytes: number;
  maxConnections: number;
  /** Connections one client address (an IPv6 one by its /64) may hold at once, in this process. */
  maxConnectionsPerIp: number;
  /** DATA carrying less than this over a window is cut with 421; 0 means no minimum. */
  minDataRateBytesPerSecond: number;
  dataRateWindowMs: number;
  /** Inactivity allowed between commands and during DATA. */
  idleTimeoutMs: number;
  /** A connection is closed after this long whatever it is doing. */
  connectionTimeoutMs: number;
  /** Read again at a STARTTLS once its files have changed, so that a renewed certificate needs no restart. */
  tls: TlsFiles;
  /** Messages (MAIL FROM commands) per client address (`clientKey`); over the limit MAIL FROM gets 451 4.7.1. */
  messageRateLimit?: Pick<FixedWindowRateLimiter, 'hit' | 'limit'>;
  observer?: SmtpObserver;
}

const TEMPORARY_FAILURE = () => smtpError(451, '4.3.0 Temporary failure, please try again later');
/** A store out of reach defers mail with 451 as a bug does, but is logged as the outage it is, not as a bug. */
const failureLevel = (error: unknown) => (isOutage(error) ? 'warn' : 'error');
const TOO_SLOW = '4.4.2 Data arriving too slowly, closing connection';
const TOO_MANY_REFUSALS = '4.7.0 Too many refused recipients, closing connection';
/**
 * Recipients one connection may have refused before it is closed (Postfix's smtpd_hard_error_limit): without a
 * limit one connection could try thousands of addresses a second, to learn which exist, at a cost to everyone else.
 */
const MAX_REFUSED_RECIPIENTS = 20;
const TOO_MANY_MESSAGES = (seconds: number) =>
  smtpError(451, `4.7.1 Too many messages from your address, try again in ${seconds} seconds`);

/**
 * The Received header's `with` for a session: SMTPUTF8 has names of its own (RFC 6531 §3.7.3), a session that used
 * STARTTLS used ESMTP (RFC 3848), and one that greeted with HELO is plain SMTP (RFC 5321 §4.4).
 */
function protocolOf(session: SMTPServerSession): string {
  if (session.envelope.smtpUtf8) return session.secure ? 'UTF8SMTPS' : 'UTF8SMTP';
  if (session.secure) return 'ESMTPS';
  return session.openingCommand === 'EHLO' ? 'ESMTP' : 'SMTP';
}

/**
 * The SMTP edge: RCPT asks the router, DATA hands the message to ingest, and 250 is sent only once ingest has
 * committed. There is no AUTH and no relaying: a recipient is accepted only if the router accepts it.
 */
export function createSmtpReceiver(options: SmtpReceiverOptions) {
  const routes = new WeakMap<SMTPServerAddress, AcceptedRoute>();
  /** Recipients refused so far, per session (a connection keeps its session object through its transactions). */
  const refusedRecipients = new WeakMap<SMTPServerSession, number>();
  /** When each session's last message was answered, and how long after it the current message's MAIL FROM came. */
  const answeredAt = new WeakMap<SMTPServerSession, number>();
  const idleBeforeMail = new WeakMap<SMTPServerSession, number>();
  /** Bytes of every message in progress, received or being stored: each connection can hold a message's worth. */
  let buffered = 0;
  const { logger, observer } = options;

  async function decideRecipient(address: SMTPServerAddress, session: SMTPServerSession): Promise<Error | null> {
    const decision = await options.router.resolve(address.address);
    const envelope = {
      clientIp: session.remoteAddress,
      mailFrom: session.envelope.mailFrom ? session.envelope.mailFrom.address : null,
      recipient: address.address,
    };
    if (decision.accepted) {
      routes.set(address, decision);
      logger.info({ ...envelope, matchedBy: decision.matchedBy }, 'recipient accepted');
      return null;
    }
    const rejection = rcptRejection(decision.reason, address.address);
    logger.info({ ...envelope, reason: decision.reason }, 'recipient refused');
    observer?.refused(decision.reason);
    return smtpError(rejection.code, rejection.message);
  }

  /**
   * Measures DATA over consecutive windows and calls `tooSlow` once when a window carried less than the minimum
   * rate. Time is measured rather than assumed, so a late timer does not make a client look slow.
   */
  function watchDataRate(tooSlow: () => void) {
    let bytes = 0;
    let since = performance.now();
    const timer =
      options.minDataRateBytesPerSecond > 0
        ? setInterval(() => {
            const now = performance.now();
            const perSecond = (bytes * 1000) / (now - since);
            bytes = 0;
            since = now;
            if (perSecond < options.minDataRateBytesPerSecond) {
              clearInterval(timer);
              tooSlow();
            }
          }, options.dataRateWindowMs)
        : undefined;
    timer?.unref();
    return {
      received(length: number) {
        bytes += length;
      },
      stop() {
        clearInterval(timer);
      },
    };
  }

  function receive(
    stream: SMTPServerDataStream,
    session: SMTPServerSession,
    answer: (err?: Error | null, message?: string) => void,
  ) {
    // A message answered while the server closes ends its session's last transaction: the session goes with it.
    const done = (err?: Error | null, message?: string) => {
      // Before the answer: smtp-server goes on at once with a MAIL FROM pipelined behind the end of DATA.
      answeredAt.set(session, performance.now());
      answer(err, message);
      if (server.closing) server.cut(session.id, SHUTTING_DOWN);
    };
    // The message goes straight into memory that ingest and its worker threads share, so it is held once.
    let shared: SharedBlocks | undefined = new SharedBlocks();
    let oversized = false;
    let overBudget = false;
    /** This message's part of `buffered`, given back once it is let go. */
    let counted = 0;
    const letGo = () => {
      buffered -= counted;
      counted = 0;
    };
    const rate = watchDataRate(() => {
      logger.info({ session: session.id, clientIp: session.remoteAddress }, 'smtp data too slow, connection cut');
      server.cut(session.id, TOO_SLOW, 'too_slow');
    });
    stream.on('data', (chunk: Buffer) => {
      rate.received(chunk.length);
      if (!shared) return;
      oversized = shared.size + chunk.length > options.maxMessageBytes;
      overBudget = !oversized && buffered + chunk.length > options.maxBufferedBytes;
      if (oversized || overBudget) {
        // Keep reading to the end of DATA, but let go of what was held: the rest is discarded as it arrives.
        shared = undefined;
        letGo();
        return;
      }
      shared.append(chunk);
      buffered += chunk.length;
      counted += chunk.length;
    });
    stream.once('error', () => {
      rate.stop();
      shared = undefined;
      letGo();
      done(TEMPORARY_FAILURE());
    });
    stream.once('end', () => {
      rate.stop();
      const endOfData = performance.now();
      if (overBudget) {
        logger.warn({ session: session.id, maxBufferedBytes: options.maxBufferedBytes }, 'smtp memory budget full');
        observer?.refused('insufficient_storage');
        done(smtpError(452, '4.3.1 Insufficient system storage, please try again later'));
        return;
      }
      if (oversized || stream.sizeExceeded || !shared) {
        letGo();
        observer?.refused('message_too_large');
        done(smtpError(552, `5.3.4 Message size exceeds fixed maximum message size ${options.maxMessageBytes}`));
        return;
      }
      const recipients = session.envelope.rcptTo
        .map((address) => routes.get(address))
        .filter((route): route is AcceptedRoute => route !== undefined);
      const mailFrom = session.envelope.mailFrom;
      const held = shared;
      options.ingest
        .ingest({
          raw: held.blocks(),
          mailFrom: mailFrom ? mailFrom.address : null,
          helo: session.hostNameAppearsAs || null,
          clientIp: session.remoteAddress,
          clientHostname: session.clientHostname || null,
          protocol: protocolOf(session),
          recipients,
          receivedAt: new Date(),
          senderIdleMs: idleBeforeMail.get(session) ?? null,
        })
        .then(
          (result) => {
            // Ingest settled the message: its blob is written and the analysis worker has answered, so nothing reads
            // the blocks any more. After a failure a worker may still be reading them, so they are left to the GC.
            observer?.accepted(held.size, (performance.now() - endOfData) / 1000, result.stageSeconds);
            held.release();
            letGo();
            const ids = result.emails.map((email) => email.id);
            const shown = ids.length > 5 ? `${ids.slice(0, 5).join(' ')} (+${ids.length - 5} more)` : ids.join(' ');
            done(null, `${QUEUED} ${shown}`);
          },
          (error) => {
            letGo();
            logger[failureLevel(error)]({ err: error, session: session.id }, 'ingest failed');
            observer?.refused('temporary_failure');
            done(TEMPORARY_FAILURE());
          },
        );
    });
  }

  const server = new EnhancedCodeServer({
    name: options.hostname,
    // smtp-server greets with `<name> ESMTP <banner>`.
    banner: 'Mailroom',
    size: options.maxMessageBytes,
    rejectOversized: true,
    maxClients: options.maxConnections,
    maxRecipients: MAX_RECIPIENTS,
    socketTimeout: options.idleTimeoutMs,
    closeTimeout: 10_000,
    disabledCommands: ['AUTH'],
    // There is no AUTH, so smtp-server's cap on commands before authentication would cut off long recipient lists.
    maxAllowedUnauthenticatedCommands: false,
    hideENHANCEDSTATUSCODES: false,
    disableReverseLookup: true,
    ...serverTlsOptions(options.tls),
    logger: false,
    onMailFrom(address, session, callback) {
      const answered = answeredAt.get(session);
      if (answered !== undefined) idleBeforeMail.set(session, performance.now() - answered);
      const badParameter = parameterRefusal('mail', address) ?? utf8Refusal('mail', address, session);
      if (badParameter) return callback(smtpError(badParameter.code, badParameter.message));
      const answer = options.messageRateLimit?.hit(clientKey(session.remoteAddress));
      if (!answer || answer.allowed) return callback();
      if (answer.crossed) {
        logger.warn({ clientIp: session.remoteAddress, perMinute: options.messageRateLimit!.limit }, 'smtp rate limit');
      }
      observer?.refused('rate_limited');
      callback(TOO_MANY_MESSAGES(answer.retryAfterSeconds));
    },
    onRcptTo(address, session, callback) {
      const badParameter = parameterRefusal('rcpt', address) ?? utf8Refusal('rcpt', address, session);
      if (badParameter) return callback(smtpError(badParameter.code, badParameter.message));
      decideRecipient(address, session).then(
        (refusal) => {
          callback(refusal);
          if (!refusal) return;
          const refused = (refusedRecipients.get(session) ?? 0) + 1;
          refusedRecipients.set(session, refused);
          if (refused < MAX_REFUSED_RECIPIENTS) return;
          logger.info({ session: session.id, clientIp: session.remoteAddress }, 'smtp too many refused recipients');
          server.cut(session.id, TOO_MANY_REFUSALS, 'too_many_refusals');
        },
        (error) => {
          logger[failureLevel(error)]({ err: error, recipient: address.address }, 'routing failed');
          observer?.refused('temporary_failure');
          callback(TEMPORARY_FAILURE());
        },
      );
    },
    onData: receive,
  });
  server.connectionTimeoutMs = options.connectionTimeoutMs;
  server.maxConnectionsPerIp = options.maxConnectionsPerIp;
  server.observer = observer;
  server.tlsCurrent = tlsRenewals(options.tls, logger, (renewed) => server.updateSecureContext(renewed));
  // A failure to listen is the caller's to report (start-up says it in one line), not a connection's.
  let listening = false;
  server.on('error', (error) => {
    if (listening) logger.warn({ err: error }, 'smtp connection error');
  });

  return {
    /** Starts listening; resolves to the bound port. */
    listen(port: number, host: string): Promise<number> {
      return new Promise((resolve, reject) => {
        const net = (server as unknown as { server: import('node:net').Server }).server;
        net.once('error', reject);
        server.listen(port, host, () => {
          listening = true;
          net.off('error', reject);
          resolve((net.address() as AddressInfo).port);
        });
      });
    },
    /** Stops accepting, lets open transactions finish (bounded by closeTimeout), then resolves. */
    close(): Promise<void> {
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}

export type SmtpReceiver = ReturnType<typeof createSmtpReceiver>;
