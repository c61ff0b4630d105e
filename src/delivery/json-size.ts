/** Code units JSON writes as a two-character escape: \b \t \n \f \r, `"` and `\`. */
const SHORT_ESCAPES = new Set([0x08, 0x09, 0x0a, 0x0c, 0x0d, 0x22, 0x5c]);

/** A string with none of the characters that JSON escapes or UTF-8 writes in more than one byte. */
const PLAIN = /^[\u0020-\u0021\u0023-\u005b\u005d-\u007f]*$/;

/**
 * The UTF-8 length of `JSON.stringify(value)`, counted without writing it: a hostile message's fields can take tens
 * of MB as JSON, and writing them out again at each step of a trim held the event loop for seconds.
 */
export function jsonBytes(value: unknown): number {
  if (typeof value === 'string') return stringJsonBytes(value);
  if (value === null || typeof value !== 'object') return (JSON.stringify(value) ?? 'null').length;
  if ('toJSON' in value && typeof value.toJSON === 'function') return jsonBytes(value.toJSON());
  if (Array.isArray(value)) {
    let bytes = 1 + Math.max(value.length, 1);
    for (const item of value) bytes += jsonBytes(item === undefined ? null : item);
    return bytes;
  }
  const entries = Object.entries(value).filter(([, item]) => item !== undefined);
  let bytes = 1 + Math.max(entries.length, 1);
  for (const [key, item] of entries) bytes += stringJsonBytes(key) + 1 + jsonBytes(item);
  return bytes;
}

/**
 * The longest start of `text` whose JSON takes at most `bytes` bytes, quotes included; never ends between the two
 * halves of a character beyond U+FFFF, which JSON parsers refuse alone.
 */
export function jsonPrefix(text: string, bytes: number): string {
  let used = 2;
  let end = 0;
  while (end < text.length) {
    const size = characterBytes(text, end);
    if (used + size > bytes) break;
    used += size;
    end += size === 4 ? 2 : 1;
  }
  return text.slice(0, end);
}

function stringJsonBytes(text: string): number {
  if (PLAIN.test(text)) return text.length + 2;
  let bytes = 2;
  for (let index = 0; index < text.length; ) {
    const size = characterBytes(text, index);
    bytes += size;
    index += size === 4 ? 2 : 1;
  }
  return bytes;
}

/** JSON's UTF-8 bytes for each ASCII code unit. */
const ASCII_BYTES = Uint8Array.from({ length: 0x80 }, (_, unit) => (SHORT_ESCAPES.has(unit) ? 2 : unit < 0x20 ? 6 : 1));

/**
 * What the character at `index` takes in JSON's UTF-8. Only a pair of UTF-16 halves takes 4 bytes (a lone half is
 * escaped as `\udxxx`), so 4 means the character is two units long.
 */
function characterBytes(text: string, index: number): number {
  const unit = text.charCodeAt(index);
  if (unit < 0x80) return ASCII_BYTES[unit] as number;
  if (unit < 0x800) return 2;
  if (unit < 0xd800 || unit > 0xdfff) return 3;
  const next = text.charCodeAt(index + 1);
  return unit <= 0xdbff && next >= 0xdc00 && next <= 0xdfff ? 4 : 6;
}
