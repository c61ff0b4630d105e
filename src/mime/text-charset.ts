import { isAscii, isUtf8 } from 'node:buffer';
import { Transform, type TransformCallback } from 'node:stream';

/** How MailParser turns a text part's bytes into UTF-8: one stream per part, for the part's charset. */
export interface TextDecoderFactory {
  decodeStream(charset: string): Transform;
}

/** The charset a text part is given when it declares none, or US-ASCII: its bytes go to the fallback below. */
export const UNDECLARED_CHARSET = 'x-mailroom-undeclared';

/** Whether a text part's charset says nothing about 8-bit bytes: none (RFC 2045's default is US-ASCII) or US-ASCII. */
export function isUndeclaredCharset(charset: string | undefined): boolean {
  return charset === undefined || ['ascii', 'usascii'].includes(charset.toLowerCase().replace(/[^a-z0-9]+/g, ''));
}

/** The length of the UTF-8 sequence a byte past ASCII starts, or 0 for one that starts none. */
function sequenceLength(lead: number): number {
  if (lead >= 0xc2 && lead <= 0xdf) return 2;
  if (lead >= 0xe0 && lead <= 0xef) return 3;
  if (lead >= 0xf0 && lead <= 0xf4) return 4;
  return 0;
}

/**
 * Reads a text part as it streams. ASCII passes as it is, as every guess reads it alike; at the first byte past ASCII
 * the part is taken as UTF-8 when that byte starts a valid UTF-8 sequence, else as windows-1252, where every byte is a
 * character (as browsers read undeclared text), and the rest follows that choice. Streaming, it stays within the body
 * bound (bounded-parser.ts), which counts what comes out as it comes. `decoded` is told the choice, and whether any
 * byte past ASCII made it.
 */
class FallbackDecoder extends Transform {
  readonly #decoded: (as: 'UTF-8' | 'windows-1252', eightBit: boolean) => void;
  #decoder: TextDecoder | undefined;
  /** Bytes from the first one past ASCII, held until the sequence it starts is whole. */
  #held: Buffer = Buffer.alloc(0);

  constructor(decoded: (as: 'UTF-8' | 'windows-1252', eightBit: boolean) => void) {
    super();
    this.#decoded = decoded;
  }

  _transform(chunk: Buffer, _encoding: BufferEncoding, done: TransformCallback): void {
    done(null, this.#decode(chunk));
  }

  _flush(done: TransformCallback): void {
    if (this.#decoder) {
      done(null, Buffer.from(this.#decoder.decode(), 'utf8'));
    } else if (this.#held.length > 0) {
      // The part ended inside its first sequence past ASCII: a cut sequence is no UTF-8.
      this.#choose(false);
      done(null, Buffer.from(this.#decoder!.decode(this.#held), 'utf8'));
    } else {
      this.#decoded('UTF-8', false);
      done();
    }
  }

  #decode(chunk: Buffer): Buffer {
    if (this.#decoder) return Buffer.from(this.#decoder.decode(chunk, { stream: true }), 'utf8');
    const bytes = this.#held.length > 0 ? Buffer.concat([this.#held, chunk]) : chunk;
    if (isAscii(bytes)) return bytes;
    const first = bytes.findIndex((byte) => byte > 0x7f);
    const length = sequenceLength(bytes[first]!);
    if (length > 0 && bytes.length - first < length) {
      this.#held = bytes.subarray(first);
      return bytes.subarray(0, first);
    }
    this.#held = Buffer.alloc(0);
    this.#choose(length > 0 && isUtf8(bytes.subarray(first, first + length)));
    return Buffer.from(this.#decoder!.decode(bytes, { stream: true }), 'utf8');
  }

  #choose(utf8: boolean): void {
    this.#decoder = new TextDecoder(utf8 ? 'utf-8' : 'windows-1252');
    this.#decoded(utf8 ? 'UTF-8' : 'windows-1252', true);
  }
}

/** A charset as quoted in a reason: a sender's text, so printable ASCII and cut short. */
function shown(charset: string): string {
  return charset.replace(/[^\x21-\x7e]/g, '?').slice(0, 64);
}

/**
 * MailParser's decoders, except where they would turn text into U+FFFD without a word: a charset neither iconv-lite
 * nor MailParser knows (which MailParser reads as UTF-8), and 8-bit bytes in a part without a charset. Both are read
 * by FallbackDecoder, and `guessed` is told what was guessed, in the words of the message's parseError.
 */
export function withCharsetFallback(base: TextDecoderFactory, guessed: (problem: string) => void): TextDecoderFactory {
  return {
    decodeStream(charset: string): Transform {
      if (charset === UNDECLARED_CHARSET) {
        return new FallbackDecoder((as) => {
          if (as === 'windows-1252') guessed('Text without a charset has 8-bit bytes: read as windows-1252');
        });
      }
      try {
        return base.decodeStream(charset);
      } catch {
        return new FallbackDecoder((as, eightBit) => {
          if (eightBit) guessed(`Unknown charset "${shown(charset)}": text read as ${as}`);
        });
      }
    },
  };
}
