import { type HeaderSection, headerFields } from './header-fields.ts';

/**
 * DKIM signatures verified per message; those below are left out, as RFC 6376 section 6.1 lets a verifier do. Each
 * signature costs a key lookup and, with its own l= or c=, a hash of the whole body: thousands of them on a large
 * message held the analysis thread, which every message waits for, for minutes.
 */
const MAX_VERIFIED_SIGNATURES = 10;

const NAME = /dkim-signature/gi;

/**
 * The message as mailauth should read it: unchanged, unless its header (`section`, as headerSection found it, or the
 * whole message when it has no end of header) has more than MAX_VERIFIED_SIGNATURES DKIM-Signature fields, whose
 * excess (the lowest, oldest ones) is then removed. The fields are told apart by mailauth's own header parser, so that
 * no spelling or fold it reads as a signature escapes the count.
 */
export function withVerifiedSignaturesOnly(
  chunks: readonly Buffer[],
  section: HeaderSection | null,
): readonly Buffer[] {
  const { header, body } = section ?? { header: Buffer.concat(chunks), body: [] };
  if ((header.toString('latin1').match(NAME)?.length ?? 0) <= MAX_VERIFIED_SIGNATURES) return chunks;
  let signatures = 0;
  const kept = headerFields(header).filter(
    (field) => field.key !== 'dkim-signature' || ++signatures <= MAX_VERIFIED_SIGNATURES,
  );
  const fields = `${kept.map((field) => field.line.toString('latin1')).join('\r\n')}\r\n\r\n`;
  return [Buffer.from(fields, 'latin1'), ...body];
}
