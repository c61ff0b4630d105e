import { createHash, type Hash } from 'node:crypto';
import type { Readable } from 'node:stream';
import type { AttachmentStream, MessageText } from 'mailparser';
import { BoundedMailParser } from './bounded-parser.ts';
import { attachmentType, PARSER_OPTIONS } from './message-parser.ts';
import { withoutTraceHeader } from './trace-header.ts';

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
 * Finds attachment `index` (0-based) of a stored message (our trace header, then the message as received), counting
 * exactly as ingest counted when it wrote `attachments_json`: MailParser's attachment parts of the same bytes in MIME
 * (document) order, with the same parser options. That includes inline images with a Content-ID and attached
 * message/rfc822 parts (as one attachment each), and excludes the text and HTML bodies. Resolves to null when the
 * message has fewer attachments, or MailParser gave up before reaching it. Parts before the wanted one are drained
 * without being held; parsing stops once the wanted part has been read.
 */
export function extractAttachment(stored: Readable, index: number): Promise<ExtractedAttachment | null> {
  const raw = withoutTraceHeader(stored);
  return new Promise((resolve, reject) => {
    const parser = new BoundedMailParser(PARSER_OPTIONS);
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
          contentType: attachmentType(data),
          contentId: data.contentId ?? null,
          contentDisposition: data.contentDisposition ?? null,
        },
        stream: content,
      });
    });
    parser.on('end', () => {
      if (!settled) resolve(null);
    });
    // Ingest stored what MailParser read before it gave up (parseSuccess false); the parts after that are not listed.
    parser.on('error', () => {
      if (settled) return;
      settled = true;
      stop();
      resolve(null);
    });
    raw.on('error', (error) => {
      if (settled) return;
      settled = true;
      reject(error);
    });
    raw.pipe(parser);
  });
}

/**
 * The SHA-256 (hex) of each attachment's decoded bytes of a stored message, in the order extractAttachment counts
 * them. Streams the message once; no part is held.
 */
export function hashAttachments(stored: Readable): Promise<string[]> {
  const raw = withoutTraceHeader(stored);
  return new Promise((resolve, reject) => {
    const parser = new BoundedMailParser(PARSER_OPTIONS);
    const hashes: Hash[] = [];
    const digests: string[] = [];
    let open = 0;
    let parsed = false;
    const finish = () => {
      if (parsed && open === 0) resolve(digests);
    };
    parser.on('data', (data: AttachmentStream | MessageText) => {
      if (data.type !== 'attachment') return;
      const content = data.content as Readable;
      const position = hashes.length;
      const hash = createHash('sha256');
      hashes.push(hash);
      open++;
      content.on('data', (chunk: Buffer) => hash.update(chunk));
      content.on('end', () => {
        data.release();
        digests[position] = hash.digest('hex');
        open--;
        finish();
      });
      content.on('error', reject);
    });
    parser.on('end', () => {
      parsed = true;
      finish();
    });
    // Ingest listed what MailParser read before it gave up (parseSuccess false): a part it left open is hashed as
    // far as it got, as its size was counted.
    parser.on('error', () => {
      raw.unpipe(parser);
      raw.destroy();
      resolve(hashes.map((hash, position) => digests[position] ?? hash.digest('hex')));
    });
    raw.on('error', reject);
    raw.pipe(parser);
  });
}

/** An attachment with its decoded bytes, for a forward that carries it along. */
export interface AttachmentWithContent {
  filename?: string;
  contentType: string;
  cid?: string;
  contentDisposition?: string;
  content: Buffer;
}

/**
 * Every attachment of a stored message with its decoded bytes, for a forward that carries them along: the list ingest
 * made, read as extractAttachment reads it, with the same parser and options (the bodies are not turned into text or
 * HTML, which hostile HTML makes slow, on the event loop). Unlike extractAttachment this holds them all. Of a
 * message MailParser gave up on, the attachments read before are given, as the API serves them.
 */
export function attachmentsWithContent(stored: Buffer): Promise<AttachmentWithContent[]> {
  return new Promise((resolve) => {
    const parser = new BoundedMailParser(PARSER_OPTIONS);
    const attachments: AttachmentWithContent[] = [];
    const chunks: Buffer[][] = [];
    let open = 0;
    let parsed = false;
    const collected = () => {
      for (const [position, attachment] of attachments.entries()) attachment.content = Buffer.concat(chunks[position]!);
      return attachments;
    };
    const finish = () => {
      if (parsed && open === 0) resolve(collected());
    };
    parser.on('data', (data: AttachmentStream | MessageText) => {
      if (data.type !== 'attachment') return;
      const parts: Buffer[] = [];
      chunks.push(parts);
      attachments.push({
        filename: data.filename,
        contentType: attachmentType(data),
        cid: data.cid,
        contentDisposition: data.contentDisposition,
        content: Buffer.alloc(0),
      });
      open++;
      data.content.on('data', (chunk: Buffer) => parts.push(chunk));
      data.content.on('end', () => {
        data.release();
        open--;
        finish();
      });
    });
    parser.on('end', () => {
      parsed = true;
      finish();
    });
    parser.on('error', () => resolve(collected()));
    parser.end(withoutTraceHeader(stored));
  });
}
