/** The header parser mailauth verifies with; its package declares no types for it. */
declare module 'mailauth/lib/tools.js' {
  /** Each header field in order: its lower-cased name (null for a line with no colon) and its lines, CRLF-joined. */
  export function parseHeaders(header: Buffer): { parsed: Array<{ key: string | null; line: Buffer }> };
}
