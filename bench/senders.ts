import { generateKeyPair } from 'node:crypto';
import { promisify } from 'node:util';
import { dkimSign } from 'mailauth';
import type { DnsServer } from '../test/helpers/dns-server.ts';

/**
 * Who the ingest bench's messages come from (`INGEST_SENDERS`):
 * - `one`: every message unsigned, from one sender, so that after the first Mailroom reuses its verdicts.
 * - `mixed`: every other message DKIM-signed (RSA 2048, rsa-sha256) by one of 1,000 sender domains in turn, each
 *   with its SPF, DKIM key and DMARC records on the loopback DNS server; the rest as `one`. Mailroom verifies each
 *   signed message afresh: its body hash, its signature and its domain's records.
 * Generating 1,000 RSA keys would take minutes, so 20 keys are shared, each under its own selector; and each
 * domain's signature is made once at start: it covers From, Date, MIME-Version and Content-Type (DKIM only requires
 * From) and the body, which are the same in all of that domain's messages, so every message keeps a Message-ID and
 * Subject of its own without being signed anew during the trials (which would take the client's CPU from the server).
 */
export const SENDER_MIXES = ['one', 'mixed'] as const;
export type SenderMix = (typeof SENDER_MIXES)[number];

/** The envelope sender and the raw message of message `n` to one recipient. */
export interface Senders {
  from(n: number): string;
  message(n: number): Buffer;
}

const ONE_SENDER = 'bench@sender.bench';
export const SIGNING_DOMAINS = 1000;
const SIGNING_KEYS = 20;
const SIGNED_HEADERS = 'from:date:mime-version:content-type';

const LINE = 'The quick brown fox jumps over the lazy dog. 0123456789abcdefghijklmnopqrstu';
const BOUNDARY = 'bench-alternative-boundary';
/**
 * The body of every message: multipart/alternative, a text part and its HTML alternative with the light markup mail
 * clients write (a paragraph per line, a link, some bold), about 10 KB in all, so that the HTML is parsed at ingest
 * and sanitized for the webhook body as received mail's is.
 */
const BODY = (() => {
  const lines = 40;
  const text = `${LINE}\r\n`.repeat(lines);
  const paragraph = `<p>The quick brown fox jumps over the <b>lazy</b> dog. <a href="https://example.com/fox?n=1&amp;b=2">0123456789</a> abcdefghijklmnopqrstu</p>\r\n`;
  const html = `<html><head><meta charset="utf-8"></head><body><div dir="ltr">\r\n${paragraph.repeat(lines)}</div></body></html>\r\n`;
  return [
    `--${BOUNDARY}\r\nContent-Type: text/plain; charset=utf-8\r\n\r\n${text}`,
    `--${BOUNDARY}\r\nContent-Type: text/html; charset=utf-8\r\n\r\n${html}`,
    `--${BOUNDARY}--\r\n`,
  ].join('');
})();
const DATE = new Date().toUTCString();

/**
 * A 10 KB message (text and HTML, see BODY) with its own Message-ID and Subject, after `signature` (DKIM-Signature
 * lines or '').
 */
function tenKilobyteMessage(signature: string, from: string, to: string, n: number): Buffer {
  return Buffer.from(
    `${signature}From: Bench <${from}>\r\nTo: <${to}>\r\nSubject: Load message ${n}\r\nMessage-ID: <bench-${process.pid}-${Date.now()}-${n}@${from.split('@')[1]}>\r\nDate: ${DATE}\r\nMIME-Version: 1.0\r\nContent-Type: multipart/alternative; boundary="${BOUNDARY}"\r\n\r\n${BODY}`,
  );
}

/** A DKIM key record in 255-byte strings, as a zone publishes a 2048-bit key. */
function dkimRecord(publicDer: string): string[] {
  const text = `v=DKIM1; k=rsa; p=${publicDer}`;
  const parts: string[] = [];
  for (let i = 0; i < text.length; i += 255) parts.push(text.slice(i, i + 255));
  return parts;
}

/** Signed domain `i`'s sender address. */
const signingSender = (i: number) => `bench@sender${i}.bench`;

/**
 * Publishes the mix's records on `dns` and returns, per recipient address, the messages to send it. Message `n` of
 * `mixed` is signed when n is even, by domain n/2 modulo 1,000.
 */
export async function prepareSenders(mix: SenderMix, dns: DnsServer): Promise<(to: string) => Senders> {
  dns.set('sender.bench', [{ type: 'TXT', data: 'v=spf1 ip4:127.0.0.1 -all' }]);
  dns.set('_dmarc.sender.bench', [{ type: 'TXT', data: 'v=DMARC1; p=none' }]);
  if (mix === 'one') {
    return (to) => ({ from: () => ONE_SENDER, message: (n) => tenKilobyteMessage('', ONE_SENDER, to, n) });
  }
  const keys = await Promise.all(
    Array.from({ length: SIGNING_KEYS }, () => promisify(generateKeyPair)('rsa', { modulusLength: 2048 })),
  );
  const signatures: string[] = [];
  for (let i = 0; i < SIGNING_DOMAINS; i++) {
    const domain = `sender${i}.bench`;
    const key = keys[i % SIGNING_KEYS]!;
    const selector = `key${i % SIGNING_KEYS}`;
    dns.set(domain, [{ type: 'TXT', data: 'v=spf1 ip4:127.0.0.1 -all' }]);
    dns.set(`_dmarc.${domain}`, [{ type: 'TXT', data: 'v=DMARC1; p=reject' }]);
    dns.set(`${selector}._domainkey.${domain}`, [
      { type: 'TXT', data: dkimRecord(key.publicKey.export({ type: 'spki', format: 'der' }).toString('base64')) },
    ]);
    // The typings want the top-level fields; mailauth signs from `signatureData`.
    const options = {
      headerList: SIGNED_HEADERS,
      signatureData: [
        {
          signingDomain: domain,
          selector,
          privateKey: key.privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
        },
      ],
    };
    const signed = await dkimSign(tenKilobyteMessage('', signingSender(i), 'anyone@bench.test', 0), options as never);
    if (signed.errors.length > 0) throw new Error(`DKIM signing: ${JSON.stringify(signed.errors)}`);
    signatures.push(signed.signatures);
  }
  return (to) => ({
    from: (n) => (n % 2 === 0 ? signingSender((n / 2) % SIGNING_DOMAINS) : ONE_SENDER),
    message: (n) => {
      if (n % 2 === 1) return tenKilobyteMessage('', ONE_SENDER, to, n);
      const i = (n / 2) % SIGNING_DOMAINS;
      return tenKilobyteMessage(signatures[i]!, signingSender(i), to, n);
    },
  });
}
