import { parseHeaders } from 'mailauth/lib/tools.js';

const LF = 10;
const CR = 13;

/** A message split where mailauth splits it: the header section with its empty line, and the body after it. */
export interface HeaderSection {
  header: Buffer;
  body: readonly Buffer[];
}

/**
 * The header section as mailauth finds it (a bare LF read as CRLF, the first empty line ending it); null when the
 * message is all header.
 */
export function headerSection(chunks: readonly Buffer[]): HeaderSection | null {
  // The two bytes before the chunk being scanned, and how many came before it.
  let before1 = -1;
  let before2 = -1;
  let position = 0;
  for (let c = 0; c < chunks.length; c++) {
    const chunk = chunks[c]!;
    for (let lf = chunk.indexOf(LF); lf !== -1; lf = chunk.indexOf(LF, lf + 1)) {
      const b1 = lf >= 1 ? chunk[lf - 1] : before1;
      const b2 = lf >= 2 ? chunk[lf - 2] : lf === 1 ? before1 : before2;
      const at = position + lf;
      if (at === 0 || b1 === LF || (b1 === CR && (at === 1 || b2 === LF))) {
        const header =
          c === 0 ? chunk.subarray(0, lf + 1) : Buffer.concat([...chunks.slice(0, c), chunk.subarray(0, lf + 1)]);
        return { header, body: [chunk.subarray(lf + 1), ...chunks.slice(c + 1)] };
      }
    }
    if (chunk.length >= 2) [before2, before1] = [chunk[chunk.length - 2]!, chunk[chunk.length - 1]!];
    else if (chunk.length === 1) [before2, before1] = [before1, chunk[0]!];
    position += chunk.length;
  }
  return null;
}

/** A header field as mailauth reads it: its lower-cased name, and its lines joined with CRLF. */
export interface HeaderField {
  key: string | null;
  line: Buffer;
}

/**
 * The fields of a header section, told apart by mailauth's own parser: a fold before the colon, or a line with no
 * colon (read as part of the field above), counts exactly as in the checks.
 */
export function headerFields(header: Buffer): HeaderField[] {
  return parseHeaders(header).parsed;
}
