import type { SMTPServerAddress } from 'smtp-server';

/** RFC 5321 §4.1.2: esmtp-keyword = (ALPHA / DIGIT) *(ALPHA / DIGIT / "-"). */
const KEYWORD = /^[A-Z0-9][A-Z0-9-]*$/;

/**
 * The parameters of the extensions EHLO announces (SIZE, 8BITMIME, SMTPUTF8); smtp-server checks their values. DSN,
 * AUTH and REQUIRETLS are not announced, so their parameters are as unknown as any other.
 */
const SUPPORTED = { mail: new Set(['SIZE', 'BODY', 'SMTPUTF8']), rcpt: new Set<string>() };

/**
 * The refusal of a MAIL or RCPT command that carries a parameter this server does not support (RFC 5321 §4.1.1.11:
 * 555), or one that is not a parameter at all (501); null when every parameter is supported. smtp-server passes
 * any parameter through, which let a sender believe that, say, its NOTIFY=SUCCESS was taken on.
 */
export function parameterRefusal(
  command: 'mail' | 'rcpt',
  address: SMTPServerAddress,
): { code: 501 | 555; message: string } | null {
  for (const keyword of Object.keys(address.args || {})) {
    if (!KEYWORD.test(keyword) || keyword.length > 64) return { code: 501, message: '5.5.4 Bad parameter syntax' };
    if (!SUPPORTED[command].has(keyword)) return { code: 555, message: `5.5.4 Unsupported parameter ${keyword}` };
  }
  return null;
}
