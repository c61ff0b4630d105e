import { domainToASCII } from 'node:url';

export interface AddressParts {
  /** `local@domain`, lower-cased, with the domain in its ASCII (punycode) form as domains are stored. */
  address: string;
  local: string;
  domain: string;
}

/**
 * The one spelling under which addresses are stored and matched: trimmed, without angle brackets, lower-cased, the
 * domain in ASCII without a trailing dot. Undefined when there is no `local@domain` shape to speak of.
 */
export function normalizeAddress(input: string): AddressParts | undefined {
  const trimmed = input
    .trim()
    .replace(/^<(.*)>$/, '$1')
    .toLowerCase();
  const at = trimmed.lastIndexOf('@');
  if (at <= 0 || at === trimmed.length - 1 || /\s/.test(trimmed)) return undefined;
  const local = unquoted(trimmed.slice(0, at));
  const domain = domainToASCII(trimmed.slice(at + 1).replace(/\.$/, ''));
  if (!domain) return undefined;
  return { address: `${local}@${domain}`, local, domain };
}

/** RFC 5322's dot-atom: what a local part can be without quotes. */
const DOT_ATOM = /^[a-z0-9!#$%&'*+/=?^_`{|}~-]+(\.[a-z0-9!#$%&'*+/=?^_`{|}~-]+)*$/;

/**
 * `"inbox"` names the same mailbox as `inbox` (RFC 5321 §4.1.2): quotes around what needs none, and backslashes
 * before characters that need none, are dropped. A local part that does need its quotes keeps them.
 */
function unquoted(local: string): string {
  const quoted = /^"((?:[^"\\]|\\.)*)"$/.exec(local);
  if (!quoted) return local;
  const text = quoted[1]!.replace(/\\(.)/g, '$1');
  return DOT_ATOM.test(text) ? text : local;
}
