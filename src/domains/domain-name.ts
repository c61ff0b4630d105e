import { domainToASCII, domainToUnicode } from 'node:url';
import { parse } from 'tldts';

const LABEL = /^(?!-)[a-z0-9-]{1,63}(?<!-)$/;

/** A label starting `xn--` must be punycode that decodes, and encodes back to itself. */
function isPunycodeSound(label: string): boolean {
  if (!label.startsWith('xn--')) return true;
  const unicode = domainToUnicode(label);
  return unicode !== label && domainToASCII(unicode) === label;
}

/**
 * Lower-cases, trims and validates a domain name, returning its ASCII (punycode) form, or undefined when it is
 * not a name mail can be received on: 1-253 characters, valid labels, and more than a bare public suffix.
 */
export function normalizeDomainName(input: string): string | undefined {
  const trimmed = input.trim().toLowerCase().replace(/\.$/, '');
  if (trimmed.length === 0 || trimmed.length > 253) return undefined;
  const ascii = domainToASCII(trimmed);
  if (!ascii || ascii.length > 253) return undefined;
  const labels = ascii.split('.');
  if (labels.length < 2 || !labels.every((label) => LABEL.test(label) && isPunycodeSound(label))) return undefined;
  if (/^\d+$/.test(labels[labels.length - 1]!)) return undefined;
  const parsed = parse(ascii, { allowPrivateDomains: true });
  if (parsed.isIp || !parsed.domain) return undefined;
  return ascii;
}

/**
 * The names above `domain` up to and including its registrable domain, nearest first, by the public suffix list:
 * `a.b.example.co.uk` gives `b.example.co.uk`, `example.co.uk`.
 */
export function parentDomains(domain: string): string[] {
  const registrable = parse(domain, { allowPrivateDomains: true }).domain;
  if (!registrable || registrable === domain) return [];
  const parents: string[] = [];
  let current = domain;
  while (current !== registrable) {
    current = current.slice(current.indexOf('.') + 1);
    parents.push(current);
  }
  return parents;
}
