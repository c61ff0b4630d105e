import { MailParser } from 'mailparser';

/**
 * The header bytes all the parts of a message below its top level may have together: as much as MailParser allows
 * any one part (the top-level header has that limit of its own). Parsing a header costs up to some 2 µs a byte
 * (thousands of RFC 2231 parameters, say), and a message may have 1,000 parts: without a bound of the whole, 30 parts
 * of 900 KB headers took 25 seconds and 1.2 GB to parse.
 */
export const MAX_PART_HEADER_BYTES = 1024 * 1024;

/** What MailParser's splitter hands it for each piece of a message (a part's headers are a `node`). */
interface SplitterChunk {
  type: string;
  root?: boolean;
  headers?: { lines: Array<{ line: string }> };
}

type Done = (error?: Error | null) => void;

const processChunk = (MailParser.prototype as unknown as { processChunk(data: SplitterChunk, done: Done): void })
  .processChunk;

/**
 * A MailParser that gives up, with an error, on a message whose parts' headers pass MAX_PART_HEADER_BYTES together. Ingest
 * and attachment extraction both parse with it, so that both stop at the same part.
 */
export class BoundedMailParser extends MailParser {
  #headerBytes = 0;

  processChunk(data: SplitterChunk, done: Done): void {
    if (data.type === 'node' && !data.root && data.headers) {
      for (const { line } of data.headers.lines) this.#headerBytes += line.length;
      // MailParser emits the error and reads no further.
      if (this.#headerBytes > MAX_PART_HEADER_BYTES) {
        done(new Error(`The headers of the message's MIME parts pass ${MAX_PART_HEADER_BYTES} bytes together`));
        return;
      }
    }
    processChunk.call(this, data, done);
  }
}
