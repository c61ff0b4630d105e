/**
 * Text a remote peer sent (a webhook receiver's answer, an SMTP server's reply) as the delivery log can keep it: a NUL,
 * which PostgreSQL text cannot hold, becomes U+FFFD, as bytes that are not UTF-8 do. Kept as sent, its attempt could
 * not be recorded, and the delivery would go out again at each lease.
 */
export function storableText(text: string): string {
  return text.replaceAll('\u0000', '\uFFFD');
}
