import nodemailer, { type Transporter } from 'nodemailer';
import type Mail from 'nodemailer/lib/mailer';
import type SMTPPool from 'nodemailer/lib/smtp-pool';
import type { DnsLookup } from '../dns/index.ts';
import type { ForwardTarget } from '../endpoints/index.ts';
import type { StoredEmail } from '../mail/index.ts';
import { attachmentsWithContent } from '../mime/index.ts';
import type { PayloadEmail } from './email-received-payload.ts';
import type { AttemptRecord } from './outbox-store.ts';

/** Set on every forward; a message arriving with this many Mailroom hops already is not forwarded again. */
export const HOPS_HEADER = 'X-Mailroom-Hops';
export const MAX_FORWARD_HOPS = 5;
/** RFC 5321 loop detection: a message with this many Received headers is refused whatever carried it. */
const MAX_RECEIVED_HEADERS = 50;

export type ForwardEmail = PayloadEmail & Pick<StoredEmail, 'fromAddress' | 'fromName' | 'rawBlobKey'>;

export type RecipientOutcome = NonNullable<AttemptRecord['recipients']>[number] & {
  /** A 4xx reply or a connection problem: worth another attempt. */
  temporary?: boolean;
};

export interface ForwardResult {
  recipients: RecipientOutcome[];
  /** Set when the whole message is refused before any send (hop limit). */
  refused?: string;
}

export interface ForwarderOptions {
  relayUrl?: string;
  dns: DnsLookup;
  mxPort: number;
  /** The name Mailroom gives in EHLO. */
  hostname: string;
  readRaw(key: string): Promise<Buffer>;
}

function headerValues(headers: StoredEmail['headers'], name: string): string[] {
  const value = headers[name];
  if (value === undefined || value === null) return [];
  return (Array.isArray(value) ? value : [value]).map(String);
}

function domainOf(address: string): string {
  return address.slice(address.lastIndexOf('@') + 1).toLowerCase();
}

/**
 * Forwards received mail by SMTP, through SMTP_RELAY_URL or straight to each recipient domain's MX. The message is
 * rebuilt (not relayed byte for byte): Mailroom's receiving address sends it, the original sender is the Reply-To,
 * and the thread headers are chained so replies land in the original conversation.
 */
export function createForwarder(options: ForwarderOptions) {
  const relay = options.relayUrl
    ? nodemailer.createTransport({
        pool: true,
        maxConnections: 10,
        url: options.relayUrl,
        name: options.hostname,
      } as SMTPPool.Options)
    : undefined;

  async function transportsFor(recipient: string): Promise<Transporter[]> {
    if (relay) return [relay];
    const mx = (await options.dns.mx(domainOf(recipient))).sort((a, b) => a.priority - b.priority);
    const hosts = mx.length > 0 ? mx.map((record) => record.exchange) : [domainOf(recipient)];
    return hosts.map((host) =>
      nodemailer.createTransport({
        host,
        port: options.mxPort,
        name: options.hostname,
        tls: { rejectUnauthorized: false },
        connectionTimeout: 30_000,
      }),
    );
  }

  async function buildMessage(email: ForwardEmail, target: ForwardTarget): Promise<Mail.Options> {
    const hops = Number(headerValues(email.headers, HOPS_HEADER.toLowerCase())[0] ?? 0) || 0;
    const receivingDomain = domainOf(email.recipient);
    const originalName = email.fromName || email.fromAddress || 'Unknown sender';
    const prefix = target.subjectPrefix ? `${target.subjectPrefix.replace(/\s+$/, '')} ` : '';
    const references = [...email.references, ...(email.messageId ? [email.messageId] : [])];
    let attachments: Mail.Attachment[] = [];
    if (target.includeAttachments && email.attachments.length > 0) {
      attachments = (await attachmentsWithContent(await options.readRaw(email.rawBlobKey))).map((attachment) => ({
        filename: attachment.filename,
        content: attachment.content,
        contentType: attachment.contentType,
        cid: attachment.cid,
        contentDisposition: attachment.contentDisposition === 'inline' ? 'inline' : 'attachment',
      }));
    }
    return {
      from: {
        name: target.senderName ?? `${originalName} via ${receivingDomain}`,
        address: target.fromAddress ?? email.recipient,
      },
      replyTo: email.fromAddress ? { name: email.fromName ?? '', address: email.fromAddress } : undefined,
      subject: `${prefix}${email.subject ?? ''}`,
      text: email.textBody ?? undefined,
      html: email.htmlBody ?? undefined,
      inReplyTo: email.messageId ?? undefined,
      references: references.length > 0 ? references : undefined,
      headers: { [HOPS_HEADER]: String(hops + 1), 'X-Forwarded-For': email.recipient },
      attachments,
    };
  }

  function hopRefusal(email: ForwardEmail): string | undefined {
    const hops = Number(headerValues(email.headers, HOPS_HEADER.toLowerCase())[0] ?? 0) || 0;
    if (hops >= MAX_FORWARD_HOPS)
      return `FORWARDING_HOP_LIMIT: the message already passed through Mailroom ${hops} times`;
    if (headerValues(email.headers, 'received').length >= MAX_RECEIVED_HEADERS) {
      return `FORWARDING_HOP_LIMIT: the message has ${MAX_RECEIVED_HEADERS} or more Received headers`;
    }
    return undefined;
  }

  async function sendOne(message: Mail.Options, envelopeFrom: string, recipient: string): Promise<RecipientOutcome> {
    let last: RecipientOutcome = {
      address: recipient,
      status: 'failed',
      error: 'No mail server found',
      temporary: true,
    };
    for (const transport of await transportsFor(recipient)) {
      try {
        const info = await transport.sendMail({
          ...message,
          to: recipient,
          envelope: { from: envelopeFrom, to: [recipient] },
        });
        if (transport !== relay) transport.close();
        return { address: recipient, status: 'sent', response: String(info.response ?? '') };
      } catch (error) {
        if (transport !== relay) transport.close();
        const code = (error as { responseCode?: number }).responseCode;
        last = {
          address: recipient,
          status: 'failed',
          error: (error as Error).message,
          temporary: code === undefined || code < 500,
        };
        // A 5xx is the recipient's server speaking for the recipient: other MX hosts would answer the same.
        if (code !== undefined && code >= 500) return last;
      }
    }
    return last;
  }

  return {
    /**
     * Sends to every recipient not in `alreadySent`, one SMTP transaction each, so each recipient's outcome is known
     * and a retry resends only to those that failed.
     */
    async forward(email: ForwardEmail, target: ForwardTarget, alreadySent: Set<string>): Promise<ForwardResult> {
      const refused = hopRefusal(email);
      if (refused) return { recipients: [], refused };
      const pending = target.recipients.filter((address) => !alreadySent.has(address.toLowerCase()));
      const outcomes: RecipientOutcome[] = target.recipients
        .filter((address) => alreadySent.has(address.toLowerCase()))
        .map((address) => ({ address, status: 'skipped', response: 'sent by an earlier attempt' }));
      const loops = pending.filter((address) => address.toLowerCase() === email.recipient.toLowerCase());
      for (const address of loops) {
        outcomes.push({
          address,
          status: 'failed',
          error: 'FORWARDING_LOOP_DETECTED: the target is the receiving address',
        });
      }
      const sendable = pending.filter((address) => !loops.includes(address));
      if (sendable.length === 0) return { recipients: outcomes };
      const message = await buildMessage(email, target);
      const envelopeFrom = target.fromAddress ?? email.recipient;
      outcomes.push(...(await Promise.all(sendable.map((address) => sendOne(message, envelopeFrom, address)))));
      return { recipients: outcomes };
    },
    close() {
      relay?.close();
    },
  };
}

export type Forwarder = ReturnType<typeof createForwarder>;
