import type { SMTPServerAddress, SMTPServerSession } from 'smtp-server';

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

/** Anything past ASCII: a local part SMTP without SMTPUTF8 cannot carry (RFC 5321 §4.1.2 is ASCII only). */
const NON_ASCII = /[\u0080-\uffff]/;

/**
 * The refusal of a MAIL or RCPT whose use of UTF-8 the session has not declared: a non-ASCII local part in a
 * transaction whose MAIL FROM lacked SMTPUTF8 (RFC 6531: 553 with 5.6.7, worded as Postfix words it), or SMTPUTF8
 * after HELO, which announces no extensions (RFC 5321 §4.1.1.1). smtp-server accepts both, and stored such mail as if
 * the sender knew it was understood. Only the local part is looked at: smtp-server hands over an A-label domain
 * (`xn--…`) already turned into Unicode, so a domain sent in Unicode cannot be told from one sent rightly.
 */
export function utf8Refusal(
  command: 'mail' | 'rcpt',
  address: SMTPServerAddress,
  session: SMTPServerSession,
): { code: 553 | 555; message: string } | null {
  const declared =
    command === 'mail' ? address.args !== false && address.args?.SMTPUTF8 === true : session.envelope.smtpUtf8;
  if (command === 'mail' && declared && session.openingCommand !== 'EHLO') {
    return { code: 555, message: '5.5.4 Unsupported parameter SMTPUTF8' };
  }
  const at = address.address.lastIndexOf('@');
  const local = at < 0 ? address.address : address.address.slice(0, at);
  if (!declared && NON_ASCII.test(local)) {
    return { code: 553, message: '5.6.7 Must declare SMTPUTF8 to send unicode address' };
  }
  return null;
}
