import { connect as connectTcp, type Socket } from 'node:net';
import { type ConnectionOptions, connect as connectTls, type TLSSocket } from 'node:tls';
import nodemailer from 'nodemailer';

export interface SendMailOptions {
  port: number;
  host?: string;
  /** Envelope sender (MAIL FROM); also the From header when the message is built here. */
  from?: string;
  /** Envelope recipients (RCPT TO). */
  to: string | string[];
  /** A complete message to send as is. Otherwise one is built from the fields below. */
  raw?: string | Buffer;
  subject?: string;
  text?: string;
  html?: string;
  /** Extra headers; entries whose value is undefined are left out. */
  headers?: Record<string, string | undefined>;
  messageId?: string;
  attachments?: Array<{ filename: string; content: string | Buffer; contentType?: string; cid?: string }>;
  /** Upgrade with STARTTLS (the test certificate is self-signed) and fail if the server does not offer it. */
  tls?: boolean;
  /** Sent as EHLO. */
  name?: string;
}

export interface SendMailResult {
  /** True when the server answered 250 to the end of DATA. */
  ok: boolean;
  /** The server's last reply line, e.g. `250 2.6.0 Ok: queued as email_…`. */
  response: string;
  /** That reply's code. */
  code: number;
  accepted: string[];
  rejected: string[];
  /** Ids from `queued as …` in a 250 reply. */
  queuedIds: string[];
}

/** Sends one message over SMTP with nodemailer and reports the server's answer; never throws for an SMTP refusal. */
export async function sendMail(options: SendMailOptions): Promise<SendMailResult> {
  const transport = nodemailer.createTransport({
    host: options.host ?? '127.0.0.1',
    port: options.port,
    secure: false,
    ignoreTLS: !options.tls,
    requireTLS: Boolean(options.tls),
    tls: { rejectUnauthorized: false },
    name: options.name ?? 'client.test',
  });
  const from = options.from ?? 'sender@sender.test';
  const recipients = Array.isArray(options.to) ? options.to : [options.to];
  const envelope = { from, to: recipients };
  const message = options.raw
    ? { envelope, raw: options.raw }
    : {
        envelope,
        from,
        to: recipients.join(', '),
        subject: options.subject ?? 'Test message',
        text: options.text,
        html: options.html,
        headers: options.headers
          ? Object.fromEntries(
              Object.entries(options.headers).filter(([, value]) => value !== undefined) as [string, string][],
            )
          : undefined,
        messageId: options.messageId,
        attachments: options.attachments,
      };
  try {
    const info = await transport.sendMail(message);
    const response = String(info.response);
    return {
      ok: true,
      response,
      code: Number(response.slice(0, 3)),
      accepted: (info.accepted as string[]).map(String),
      rejected: (info.rejected as string[]).map(String),
      queuedIds: /queued as (.*)$/.exec(response)?.[1]?.match(/\w+_\w+/g) ?? [],
    };
  } catch (error) {
    const e = error as { response?: string; responseCode?: number; rejected?: string[] };
    return {
      ok: false,
      response: e.response ?? String(error),
      code: e.responseCode ?? 0,
      accepted: [],
      rejected: (e.rejected ?? []).map(String),
      queuedIds: [],
    };
  } finally {
    transport.close();
  }
}

/**
 * A raw SMTP conversation over a real socket, for what a client library would not do (oversize bodies, pipelining,
 * dropping the connection mid-DATA). `command()` writes a line and resolves to the complete (multi-line) reply.
 * `localAddress` picks the client's own address (any of 127.0.0.0/8 works on Linux loopback).
 */
export async function openSmtpConversation(port: number, host = '127.0.0.1', localAddress?: string) {
  let socket: Socket | TLSSocket = connectTcp({ port, host, localAddress });
  let buffer = '';
  let waiting: { resolve(reply: string): void } | undefined;
  const replies: string[] = [];
  let closed = false;
  const closedPromise = new Promise<void>((resolve) => socket.once('close', () => resolve()));

  const deliver = () => {
    for (;;) {
      const match = /(^|\r\n)(\d{3}) [^\r\n]*\r\n/.exec(buffer);
      if (!match) return;
      const end = match.index + match[0].length;
      const reply = buffer.slice(0, end).replace(/^\r\n/, '').replace(/\r\n$/, '');
      buffer = buffer.slice(end);
      if (waiting) {
        const current = waiting;
        waiting = undefined;
        current.resolve(reply);
      } else replies.push(reply);
    }
  };
  const onData = (chunk: Buffer) => {
    buffer += chunk.toString('utf8');
    deliver();
  };
  socket.on('data', onData);
  socket.on('error', () => {});
  socket.once('close', () => {
    closed = true;
    if (waiting) waiting.resolve('');
  });

  const next = () =>
    new Promise<string>((resolve) => {
      const queued = replies.shift();
      if (queued !== undefined) resolve(queued);
      else if (closed) resolve('');
      else waiting = { resolve };
    });

  const greeting = await next();
  return {
    greeting,
    /** Sends `line` with CRLF and waits for the reply. */
    async command(line: string): Promise<string> {
      socket.write(`${line}\r\n`);
      return next();
    },
    /** Writes raw bytes without waiting for anything. */
    write(data: string | Buffer): Promise<void> {
      return new Promise((resolve, reject) => socket.write(data, (error) => (error ? reject(error) : resolve())));
    },
    /** Waits for the next reply (e.g. after sending the end of DATA with `write`). */
    reply: next,
    /**
     * Issues STARTTLS and upgrades the socket; resolves to the STARTTLS reply. `pipelined` is written in the same
     * packet right after the command, in plaintext, as an attacker injecting commands would.
     */
    async startTls(pipelined = '', options: ConnectionOptions = {}): Promise<string> {
      socket.write(`STARTTLS\r\n${pipelined}`);
      const answer = await next();
      if (!answer.startsWith('220')) return answer;
      socket.off('data', onData);
      socket = connectTls({ socket: socket as Socket, rejectUnauthorized: false, servername: 'localhost', ...options });
      await new Promise<void>((resolve, reject) => {
        (socket as TLSSocket).once('secureConnect', resolve);
        socket.once('error', reject);
      });
      socket.on('data', onData);
      return answer;
    },
    /** The TLS version and cipher suite negotiated. */
    tlsProtocol: () => (socket as TLSSocket).getProtocol(),
    tlsCipher: () => (socket as TLSSocket).getCipher().name,
    /** The certificate the server presented in the TLS handshake. */
    peerCertificate() {
      return (socket as TLSSocket).getPeerX509Certificate();
    },
    get encrypted(): boolean {
      return 'encrypted' in socket && Boolean((socket as TLSSocket).encrypted);
    },
    /** Drops the connection without QUIT. */
    destroy() {
      socket.destroy();
      return closedPromise;
    },
    async quit() {
      const answer = await this.command('QUIT');
      socket.end();
      await closedPromise;
      return answer;
    },
    closed: closedPromise,
  };
}

export type SmtpConversation = Awaited<ReturnType<typeof openSmtpConversation>>;
