import { createRequire } from 'node:module';
import { isIP } from 'node:net';
import type { Transporter } from 'nodemailer';
import type Mail from 'nodemailer/lib/mailer';
import type SMTPPool from 'nodemailer/lib/smtp-pool';
import { storableText } from '../core/index.ts';
import type { DnsLookup } from '../dns/index.ts';
import { addressLiteral, type ForwardTarget } from '../endpoints/index.ts';
import type { StoredEmail } from '../mail/index.ts';
import { attachmentsWithContent } from '../mime/index.ts';
import type { PayloadEmail } from './email-received-payload.ts';
import type { AddressGuard } from './http-sender.ts';
import type { AttemptRecord } from './outbox-store.ts';

/** Set on every forward; a message arriving with this many Mailroom hops already is not forwarded again. */
const HOPS_HEADER = 'X-Mailroom-Hops';
const MAX_FORWARD_HOPS = 5;
/** Set on every forward: how many copies of the original message Mailroom's forwards made, as this one's level. */
const COPIES_HEADER = 'X-Mailroom-Copies';
/**
 * Most copies of one message a level of forwards may make. The hop limit bounds how deep forwards go, not how wide:
 * a group whose members come back to Mailroom (a catch-all routed to the group, say) multiplies the message by its
 * size at every hop, 50 members over 5 hops some 300 million copies.
 */
const MAX_FORWARD_COPIES = 100;
/** RFC 5321 loop detection: a message with this many Received headers is refused whatever carried it. */
const MAX_RECEIVED_HEADERS = 50;

export type ForwardEmail = PayloadEmail & Pick<StoredEmail, 'fromAddress' | 'fromName' | 'mailFrom' | 'rawBlobKey'>;

export type RecipientOutcome = NonNullable<AttemptRecord['recipients']>[number] & {
  /** A 4xx reply or a connection problem: worth another attempt. */
  temporary?: boolean;
};

export interface ForwardResult {
  recipients: RecipientOutcome[];
  /** Set when the whole message is refused before any send (the hop or copy limit). */
  refused?: string;
}

export interface ForwarderOptions {
  relayUrl?: string;
  dns: DnsLookup;
  mxPort: number;
  /** The name Mailroom gives in EHLO. */
  hostname: string;
  /** The SSRF rule, applied to every address direct MX delivery connects to; the relay is the operator's choice. */
  guard: AddressGuard;
  readRaw(key: string): Promise<Buffer>;
}

function headerValues(headers: StoredEmail['headers'], name: string): string[] {
  const value = headers[name];
  if (value === undefined || value === null) return [];
  return (Array.isArray(value) ? value : [value]).map(String);
}

/**
 * The largest whole number among a message's values of one of Mailroom's counting headers (hops, copies), or
 * `least`. Only Mailroom writes them; any other value (a sender's negative or fraction) counts as none, so that it
 * cannot buy a forwarding loop more rounds or copies than the limits.
 */
function countOf(email: ForwardEmail, header: string, least: number): number {
  const counts = headerValues(email.headers, header.toLowerCase())
    .map((value) => value.trim())
    .filter((value) => /^\d+$/.test(value))
    .map(Number);
  return Math.max(least, ...counts);
}

const hopsOf = (email: ForwardEmail) => countOf(email, HOPS_HEADER, 0);

/** The copies forwarding `email` to every recipient of `target` makes, counting those its earlier forwards made. */
const copiesAfter = (email: ForwardEmail, target: ForwardTarget) =>
  countOf(email, COPIES_HEADER, 1) * target.recipients.length;

function domainOf(address: string): string {
  return address.slice(address.lastIndexOf('@') + 1).toLowerCase();
}

/**
 * Forwards received mail by SMTP, through SMTP_RELAY_URL or straight to each recipient domain's MX. The message is
 * rebuilt (not relayed byte for byte): Mailroom's receiving address sends it, its Reply-To is the original's (or the
 * original sender), and the thread headers are chained so replies land in the original conversation.
 */
export function createForwarder(options: ForwarderOptions) {
  // Loaded here rather than with the module: threads that never forward (ingest's writer) reach it through indexes.
  const nodemailer: typeof import('nodemailer') = createRequire(import.meta.url)('nodemailer');
  const relay = options.relayUrl
    ? nodemailer.createTransport({
        pool: true,
        maxConnections: 10,
        url: options.relayUrl,
        name: options.hostname,
      } as SMTPPool.Options)
    : undefined;

  /**
   * The recipient domain's MX hosts by priority, or the domain itself (the implicit MX) when it has none, or the IP
   * address of an address literal, which takes the mail itself (RFC 5321 section 4.1.3). None when its only MX is
   * the null MX (RFC 7505, exchange "."): the domain takes no mail.
   */
  async function mxHosts(recipient: string): Promise<string[]> {
    const literal = addressLiteral(domainOf(recipient));
    if (literal) return [literal];
    const mx = (await options.dns.mx(domainOf(recipient))).sort((a, b) => a.priority - b.priority);
    if (mx.length === 0) return [domainOf(recipient)];
    // The resolver reads the null MX's "." as an empty name.
    return mx.map((record) => record.exchange).filter((exchange) => exchange !== '');
  }

  const hostAddresses = (host: string) => (isIP(host) ? Promise.resolve([host]) : options.dns.hostAddresses(host));

  async function buildMessage(email: ForwardEmail, target: ForwardTarget, identity?: string): Promise<Mail.Options> {
    const hops = hopsOf(email);
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
    const from = target.fromAddress ?? email.recipient;
    return {
      from: { name: target.senderName ?? `${originalName} via ${receivingDomain}`, address: from },
      // One Message-ID for every attempt of a delivery, so the copies a retry after a crash or a lost answer sends
      // are seen as one message by the recipient's server.
      ...(identity === undefined ? {} : { messageId: `<${identity}@${domainOf(from)}>` }),
      replyTo: replyAddresses(email),
      subject: `${prefix}${email.subject ?? ''}`,
      text: email.textBody ?? undefined,
      html: email.htmlBody ?? undefined,
      inReplyTo: email.messageId ?? undefined,
      references: references.length > 0 ? references : undefined,
      headers: {
        [HOPS_HEADER]: String(hops + 1),
        [COPIES_HEADER]: String(copiesAfter(email, target)),
        'X-Forwarded-For': email.recipient,
      },
      attachments,
    };
  }

  /** Where replies go: the original Reply-To when it names addresses, else the original sender. */
  function replyAddresses(email: ForwardEmail): Mail.Address[] | undefined {
    const named = (email.replyTo?.addresses ?? []).flatMap(({ name, address }) =>
      address ? [{ name: name ?? '', address }] : [],
    );
    if (named.length > 0) return named;
    return email.fromAddress ? [{ name: email.fromName ?? '', address: email.fromAddress }] : undefined;
  }

  function forwardRefusal(email: ForwardEmail, target: ForwardTarget): string | undefined {
    const hops = hopsOf(email);
    if (hops >= MAX_FORWARD_HOPS)
      return `FORWARDING_HOP_LIMIT: the message already passed through Mailroom ${hops} times`;
    const copies = copiesAfter(email, target);
    if (copies > MAX_FORWARD_COPIES) {
      return `FORWARDING_COPY_LIMIT: forwarding to ${target.recipients.length} recipients would make ${copies} copies of the message, more than ${MAX_FORWARD_COPIES}`;
    }
    if (headerValues(email.headers, 'received').length >= MAX_RECEIVED_HEADERS) {
      return `FORWARDING_HOP_LIMIT: the message has ${MAX_RECEIVED_HEADERS} or more Received headers`;
    }
    return undefined;
  }

  async function sendThrough(
    transport: Transporter,
    message: Mail.Options,
    envelopeFrom: string,
    recipient: string,
  ): Promise<RecipientOutcome> {
    try {
      const info = await transport.sendMail({
        ...message,
        to: recipient,
        envelope: { from: envelopeFrom, to: [recipient] },
      });
      return { address: recipient, status: 'sent', response: storableText(String(info.response ?? '')) };
    } catch (error) {
      const code = (error as { responseCode?: number }).responseCode;
      return {
        address: recipient,
        status: 'failed',
        error: storableText((error as Error).message),
        temporary: code === undefined || code < 500,
      };
    }
  }

  /**
   * Tries each MX host in turn, connecting only to addresses resolved and checked here, so DNS cannot steer the
   * connection elsewhere afterwards. A host with any internal address is skipped as a whole. When no host takes the
   * message, a host that failed for now (its lookup, its connection, a 4xx) makes the failure temporary, whatever
   * the hosts after it said: a later attempt may reach it.
   */
  async function sendDirect(message: Mail.Options, envelopeFrom: string, recipient: string): Promise<RecipientOutcome> {
    const failed = (error: string, temporary: boolean): RecipientOutcome => ({
      address: recipient,
      status: 'failed',
      error,
      temporary,
    });
    let hosts: string[];
    try {
      hosts = await mxHosts(recipient);
    } catch (error) {
      // A domain DNS refuses as a name can never be sent to; a lookup that failed may work later.
      const badName = (error as NodeJS.ErrnoException).code === 'EBADNAME';
      return failed(`MX lookup for ${domainOf(recipient)} failed: ${(error as Error).message}`, !badName);
    }
    if (hosts.length === 0) return failed(`${domainOf(recipient)} accepts no mail (null MX record)`, false);
    let last = failed('No mail server found', true);
    let temporary: RecipientOutcome | undefined;
    for (const host of hosts) {
      let addresses: string[];
      try {
        addresses = await hostAddresses(host);
      } catch (error) {
        // As for the domain: a host DNS refuses as a name never resolves; a lookup that failed may work later.
        const badName = (error as NodeJS.ErrnoException).code === 'EBADNAME';
        last = failed(`${host}: ${(error as Error).message}`, !badName);
        if (!badName) temporary = last;
        continue;
      }
      if (addresses.length === 0) {
        last = temporary = failed(`Host not found (${host})`, true);
        continue;
      }
      const blocked = addresses.find((ip) => options.guard(ip));
      if (blocked) {
        const where = isIP(host) ? host : `${host} resolves to ${blocked}`;
        last = failed(`${where}: ${options.guard(blocked)}`, false);
        continue;
      }
      for (const ip of addresses) {
        const transport = nodemailer.createTransport({
          host: ip,
          port: options.mxPort,
          name: options.hostname,
          tls: { rejectUnauthorized: false, servername: isIP(host) ? undefined : host },
          connectionTimeout: 30_000,
        });
        last = await sendThrough(transport, message, envelopeFrom, recipient);
        transport.close();
        // Sent, or a 5xx: the recipient's server spoke for the recipient, and other MX hosts would answer the same.
        if (!last.temporary) return last;
        temporary = last;
      }
    }
    return temporary ?? last;
  }

  function sendOne(message: Mail.Options, envelopeFrom: string, recipient: string): Promise<RecipientOutcome> {
    return relay ? sendThrough(relay, message, envelopeFrom, recipient) : sendDirect(message, envelopeFrom, recipient);
  }

  return {
    /**
     * Sends to every recipient not in `alreadySent`, one SMTP transaction each, so each recipient's outcome is known
     * and a retry resends only to those that failed. `identity` names the delivery (the same for each of its
     * attempts) and makes the Message-ID; without it (a test send) every message gets a new one.
     */
    async forward(
      email: ForwardEmail,
      target: ForwardTarget,
      alreadySent: Set<string>,
      identity?: string,
    ): Promise<ForwardResult> {
      const refused = forwardRefusal(email, target);
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
      const message = await buildMessage(email, target, identity);
      // A bounce (null reverse-path) goes on as one: were it to fail too, no bounce comes back here to be forwarded.
      const envelopeFrom = email.mailFrom ? (target.fromAddress ?? email.recipient) : '';
      outcomes.push(...(await Promise.all(sendable.map((address) => sendOne(message, envelopeFrom, address)))));
      return { recipients: outcomes };
    },
    close() {
      relay?.close();
    },
  };
}

export type Forwarder = ReturnType<typeof createForwarder>;
