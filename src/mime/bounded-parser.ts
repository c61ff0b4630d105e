import { isAscii } from 'node:buffer';
import type { TransformCallback } from 'node:stream';
import { MailParser } from 'mailparser';

/**
 * The header bytes all the parts of a message below its top level may have together: as much as MailParser allows
 * any one part (the top-level header has that limit of its own). A header's parse costs time and memory by the
 * byte, and a message may have 1,000 parts, so without a bound of the whole one message could hold its thread for long.
 */
const MAX_PART_HEADER_BYTES = 1024 * 1024;

/**
 * Bodies longer than this many characters are cut to it. 5 million characters holds any real message (the whole
 * raw message stays in the blob store); past that a body is most likely hostile and would only bloat rows and
 * webhook payloads.
 */
export const MAX_BODY_CHARS = 5_000_000;

/**
 * The most bytes handed to MailParser's splitter at once. It passes on a whole write's body lines as one piece, and
 * a piece is decoded whole: smaller writes let the text bound (see BoundedMailParser) stop within 64 KB of it.
 */
const WRITE_BYTES = 64 * 1024;

/** What MailParser's splitter hands it for each piece of a message (a part's headers are a `node`). */
interface SplitterChunk {
  type: string;
  root?: boolean;
  headers?: { lines: Array<{ line: string }> };
}

/** MailParser's own record of the part being read; a text body's decoded text comes out of `contentStream`. */
interface ParserNode {
  contentType?: string;
  isAttachment?: boolean;
  contentStream?: NodeJS.ReadableStream;
}

/**
 * How many characters of text `chunk` adds at least: a string's own length, or a Buffer's UTF-8 lead bytes less its
 * CRs (MailParser drops those before LF). Never more than the text MailParser makes of it.
 */
function charactersAtLeast(chunk: Buffer | string): number {
  if (typeof chunk === 'string') return chunk.length;
  // Every body's bytes pass here, and most bodies are ASCII, whose characters are its bytes: native calls spare a loop.
  if (isAscii(chunk)) {
    let carriageReturns = 0;
    for (let at = chunk.indexOf(0x0d); at !== -1; at = chunk.indexOf(0x0d, at + 1)) carriageReturns++;
    return chunk.length - carriageReturns;
  }
  let characters = 0;
  for (let i = 0; i < chunk.length; i++) {
    const byte = chunk[i]!;
    if ((byte < 0x80 || byte > 0xbf) && byte !== 0x0d) characters++;
  }
  return characters;
}

type Done = (error?: Error | null) => void;

const processChunk = (MailParser.prototype as unknown as { processChunk(data: SplitterChunk, done: Done): void })
  .processChunk;

/**
 * A MailParser that gives up, with an error, on a message whose parts' headers pass MAX_PART_HEADER_BYTES together,
 * and that stops decoding text (or HTML) once it holds MAX_BODY_CHARS of it, which is all a body keeps: MailParser
 * holds a body whole and then rewrites its line ends, slowly for many short lines. Ingest and attachment extraction
 * both parse with it, so that both stop at the same part.
 */
export class BoundedMailParser extends MailParser {
  #headerBytes = 0;
  /** Characters of decoded text so far, by text type (text/plain or text/html), over all parts. */
  readonly #bodyCharacters = new Map<string, number>();

  _transform(chunk: Buffer, encoding: BufferEncoding, done: TransformCallback): void {
    let offset = 0;
    const next = (error?: Error | null) => {
      if (error || offset >= chunk.length) return done(error);
      const piece = chunk.subarray(offset, offset + WRITE_BYTES);
      offset += WRITE_BYTES;
      super._transform(piece, encoding, next);
    };
    next();
  }

  processChunk(data: SplitterChunk, done: Done): void {
    if (data.type === 'node' && !data.root && data.headers) {
      for (const { line } of data.headers.lines) this.#headerBytes += line.length;
      // MailParser emits the error and reads no further.
      if (this.#headerBytes > MAX_PART_HEADER_BYTES) {
        done(new Error(`The headers of the message's MIME parts pass ${MAX_PART_HEADER_BYTES} bytes together`));
        return;
      }
    }
    const node = (this as unknown as { curnode: ParserNode | false }).curnode;
    if (data.type === 'body' && node && this.#isFull(node)) {
      // The rest of this part would be cut from the body: it is not decoded.
      done();
      return;
    }
    processChunk.call(this, data, done);
    if (data.type === 'node') this.#countText((this as unknown as { curnode: ParserNode }).curnode);
  }

  #isFull(node: ParserNode): boolean {
    return !node.isAttachment && (this.#bodyCharacters.get(node.contentType ?? '') ?? 0) >= MAX_BODY_CHARS;
  }

  /** Counts the text of a part MailParser reads as a body; its own reader of the text emits each chunk as `data`. */
  #countText(node: ParserNode): void {
    const type = node.contentType;
    if (node.isAttachment || !node.contentStream || !type) return;
    node.contentStream.on('data', (chunk: Buffer | string) => {
      this.#bodyCharacters.set(type, (this.#bodyCharacters.get(type) ?? 0) + charactersAtLeast(chunk));
    });
  }
}
