import { parseHeaders } from 'mailauth/lib/tools.js';

/**
 * DKIM signatures verified per message; those below are left out, as RFC 6376 section 6.1 lets a verifier do. Each
 * signature costs a key lookup and, with its own l= or c=, a hash of the whole body: thousands of them on a large
 * message held the analysis thread, which every message waits for, for minutes.
 */
export const MAX_VERIFIED_SIGNATURES = 10;

const LF = 10;
const CR = 13;
const NAME = /dkim-signature/gi;

/**
 * Where the header section ends, just past its empty line, as mailauth finds it (a bare LF read as CRLF); null when
 * the message is all header.
 */
function headerEnd(chunks: readonly Buffer[]): { chunk: number; offset: number } | null {
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
      if (at === 0 || b1 === LF || (b1 === CR && (at === 1 || b2 === LF))) return { chunk: c, offset: lf + 1 };
    }
    if (chunk.length >= 2) [before2, before1] = [chunk[chunk.length - 2]!, chunk[chunk.length - 1]!];
    else if (chunk.length === 1) [before2, before1] = [before1, chunk[0]!];
    position += chunk.length;
  }
  return null;
}

/**
 * The message as mailauth should read it: unchanged, unless its header has more than MAX_VERIFIED_SIGNATURES
 * DKIM-Signature fields, whose excess (the lowest, oldest ones) is then removed. The fields are told apart by
 * mailauth's own header parser, so that no spelling or fold it reads as a signature escapes the count.
 */
export function withVerifiedSignaturesOnly(chunks: readonly Buffer[]): readonly Buffer[] {
  const end = headerEnd(chunks);
  const headerChunks = end ? [...chunks.slice(0, end.chunk), chunks[end.chunk]!.subarray(0, end.offset)] : chunks;
  const header = Buffer.concat(headerChunks);
  if ((header.toString('latin1').match(NAME)?.length ?? 0) <= MAX_VERIFIED_SIGNATURES) return chunks;
  let signatures = 0;
  const kept = parseHeaders(header).parsed.filter(
    (field) => field.key !== 'dkim-signature' || ++signatures <= MAX_VERIFIED_SIGNATURES,
  );
  const fields = Buffer.from(`${kept.map((field) => field.line.toString('latin1')).join('\r\n')}\r\n\r\n`, 'latin1');
  if (!end) return [fields];
  return [fields, chunks[end.chunk]!.subarray(end.offset), ...chunks.slice(end.chunk + 1)];
}
