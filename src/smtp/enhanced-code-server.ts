import type { Socket } from 'node:net';
import { SMTPServer, type SMTPServerSession } from 'smtp-server';
import { earlierFromSameClient } from './client-address.ts';
import type { SmtpObserver, SmtpRefusalReason } from './smtp-receiver.ts';
import { beforeStartTls } from './tls-material.ts';

/** An SMTP error whose text starts with its own enhanced status code (see `EnhancedCodeServer`). */
export function smtpError(code: number, text: string): Error {
  return Object.assign(new Error(text), { responseCode: code });
}

const TOO_MANY_FROM_ADDRESS = '4.7.0 Too many connections from your address';
const CONNECTION_TIMEOUT = '4.4.2 Connection time limit reached, closing connection';
/** Syntax and sequence errors (500-504, 555) one connection may have before it is closed, as Postfix and Exim do. */
const MAX_ERRORS = 20;
const TOO_MANY_ERRORS = '4.7.0 Too many errors, closing connection';
export const SHUTTING_DOWN = '4.3.2 Server shutting down';

/** How the reply to an accepted message starts (see `EnhancedCodeServer`, which sends it without delay). */
export const QUEUED = 'Ok: queued as';

/**
 * smtp-server prefixes every reply with an enhanced status code chosen from the basic code alone, which would make a
 * relay refusal `550 5.1.1` (it must be `550 5.7.1`). Replies whose text already starts with an enhanced code are
 * sent as they are; every other reply keeps smtp-server's own code. It also holds the edge's connection limits (per
 * address, lifetime), cuts a session with 421, and lets sessions go as their transactions end when it closes.
 */
export class EnhancedCodeServer extends SMTPServer {
  connectionTimeoutMs = 0;
  maxConnectionsPerIp = Number.POSITIVE_INFINITY;
  observer?: SmtpObserver;
  /** Resolves once the certificate served is the one in the files (`tlsRenewals`). */
  tlsCurrent: () => Promise<unknown> = async () => undefined;
  private readonly lifetimes = new Map<string, NodeJS.Timeout>();

  override connect(socket: Socket, socketOptions: unknown) {
    super.connect(socket, socketOptions as never);
    type Connection = { id: string; _socket: Socket; send(code: number, data: unknown, context?: unknown): void };
    let connection: Connection | undefined;
    // Found by its socket: one over maxClients has been refused (421) and dropped from the set already, and the
    // latest entry is then another connection, whose replies would be wrapped once more per refusal.
    for (const entry of (this as unknown as { connections: Set<Connection> }).connections) {
      if (entry._socket === socket) connection = entry;
    }
    if (!connection) {
      this.observer?.refused('server_full');
      return;
    }
    const send = connection.send.bind(connection);
    let errors = 0;
    connection.send = (code, data, context) => {
      // Replies to pipelined commands (MAIL, RCPT, DATA arrive in one packet) share one write: the first corks the
      // socket until the next turn of the event loop, since each write is a system call. The reply that ends a
      // message goes out at once.
      const socket = connection!._socket;
      const endsMessage = typeof data === 'string' && data.startsWith(QUEUED);
      if (!endsMessage && !socket.writableCorked) {
        socket.cork();
        setImmediate(() => socket.uncork());
      }
      send(code, data, typeof data === 'string' && /^[245]\.\d{1,3}\.\d{1,3} /.test(data) ? false : context);
      if (endsMessage && socket.writableCorked) socket.uncork();
      if (((code >= 500 && code <= 504) || code === 555) && ++errors === MAX_ERRORS) {
        this.cut(connection!.id, TOO_MANY_ERRORS, 'too_many_errors');
      }
    };
    beforeStartTls(connection, () => this.tlsCurrent());
    if (this.connectionTimeoutMs > 0) {
      const { id } = connection;
      // smtp-server calls onClose only for sessions it served, not for one onConnect refused (per address), so the
      // deadline also forgets itself; unref'd, it never keeps a stopping process alive.
      const deadline = setTimeout(() => {
        this.lifetimes.delete(id);
        // A session is told why (RFC 5321 §3.8); a connection refused at its start is only dropped.
        if (!this.cut(id, CONNECTION_TIMEOUT, 'connection_timeout')) socket.destroy();
      }, this.connectionTimeoutMs);
      deadline.unref();
      this.lifetimes.set(id, deadline);
    }
  }

  // smtp-server drops the raw socket's listeners on STARTTLS, so the session's end is the reliable signal.
  override onClose(session: SMTPServerSession) {
    clearTimeout(this.lifetimes.get(session.id));
    this.lifetimes.delete(session.id);
  }

  override onConnect(session: SMTPServerSession, callback: (err?: Error | null) => void) {
    if (earlierFromSameClient(this.connections, session) < this.maxConnectionsPerIp) return callback(null);
    this.observer?.refused('too_many_connections');
    callback(smtpError(421, TOO_MANY_FROM_ADDRESS));
  }

  /** Set once close() began: each session is let go as soon as it has no transaction open. */
  closing = false;

  /**
   * Stops accepting; a session with no transaction open has nothing to finish, so it hears 421 now rather than at
   * the end of the grace (`closeTimeout`), which is left to sessions in the middle of a message.
   */
  override close(callback?: (() => void) | null) {
    this.closing = true;
    super.close(callback);
    for (const connection of this.connections) {
      if (!connection.session.envelope?.mailFrom) this.cut(connection.id, SHUTTING_DOWN);
    }
  }

  /**
   * Answers 421 with `text` and closes the session's connection, without waiting for the client; a limit's cut is
   * counted as a refusal for `reason`. False when the session is gone already.
   */
  cut(sessionId: string, text: string, reason?: SmtpRefusalReason): boolean {
    for (const connection of this.connections) {
      if (connection.id !== sessionId) continue;
      if (reason) this.observer?.refused(reason);
      const socket = connection._socket;
      // smtp-server ends the socket after a 421; destroying it once the reply is out ends the DATA stream too.
      connection.send(421, text);
      if (socket.writableFinished) socket.destroy();
      else socket.once('finish', () => socket.destroy());
      return true;
    }
    return false;
  }
}
