import { createHash } from 'node:crypto';
import type { Readable } from 'node:stream';
import { type Attachment, type AttachmentStream, MailParser, type MessageText, simpleParser } from 'mailparser';
import { PARSER_OPTIONS } from './message-parser.ts';

export interface ExtractedAttachment {
  meta: {
    filename: string | null;
    contentType: string;
    contentId: string | null;
    contentDisposition: string | null;
  };
  /** The decoded bytes of the part. */
  stream: Readable;
}

/**
 * Finds attachment `index` (0-based) of a raw message, counting exactly as ingest counted when it wrote
 * `attachments_json`: MailParser's attachment parts in MIME (document) order, with the same parser options. That
 * includes inline images with a Content-ID and attached message/rfc822 parts (as one attachment each), and excludes
 * the text and HTML bodies. Resolves to null when the message has fewer attachments. Parts before the wanted one
 * are drained without being held; parsing stops once the wanted part has been read.
 */
export function extractAttachment(raw: Readable, index: number): Promise<ExtractedAttachment | null> {
  return new Promise((resolve, reject) => {
    const parser = new MailParser(PARSER_OPTIONS);
    let seen = 0;
    let settled = false;
    const stop = () => {
      raw.unpipe(parser);
      raw.destroy();
    };
    parser.on('data', (data: AttachmentStream | MessageText) => {
      if (data.type !== 'attachment') return;
      const content = data.content as Readable;
      const position = seen++;
      if (position !== index || settled) {
        content.on('end', () => data.release());
        content.resume();
        return;
      }
      settled = true;
      content.on('end', () => {
        data.release();
        stop();
      });
      content.on('error', stop);
      resolve({
        meta: {
          filename: data.filename ?? null,
          contentType: data.contentType,
          contentId: data.contentId ?? null,
          contentDisposition: data.contentDisposition ?? null,
        },
        stream: content,
      });
    });
    parser.on('end', () => {
      if (!settled) resolve(null);
    });
    const fail = (error: Error) => {
      if (settled) return;
      settled = true;
      reject(error);
    };
    parser.on('error', fail);
    raw.on('error', fail);
    raw.pipe(parser);
  });
}

/**
 * The SHA-256 (hex) of each attachment's decoded bytes, in the order extractAttachment counts them. Streams the
 * message once; no part is held.
 */
export function hashAttachments(raw: Readable): Promise<string[]> {
  return new Promise((resolve, reject) => {
    const parser = new MailParser(PARSER_OPTIONS);
    const hashes: Promise<string>[] = [];
    parser.on('data', (data: AttachmentStream | MessageText) => {
      if (data.type !== 'attachment') return;
      const content = data.content as Readable;
      const hash = createHash('sha256');
      hashes.push(
        new Promise((done, fail) => {
          content.on('data', (chunk: Buffer) => hash.update(chunk));
          content.on('end', () => {
            data.release();
            done(hash.digest('hex'));
          });
          content.on('error', fail);
        }),
      );
    });
    parser.on('end', () => Promise.all(hashes).then(resolve, reject));
    parser.on('error', reject);
    raw.on('error', reject);
    raw.pipe(parser);
  });
}

/**
 * Every attachment of a raw message with its decoded bytes, for a forward that carries them along. Unlike
 * extractAttachment this holds them all, and keeps cid: links in the HTML as they are.
 */
export async function attachmentsWithContent(raw: Buffer): Promise<Attachment[]> {
  return (await simpleParser(raw, { keepCidLinks: true })).attachments;
}
