import { BlockList, isIP } from 'node:net';
import { Invalid, urlHost } from '../core/index.ts';
import type { DnsLookup } from '../dns/index.ts';

const BLOCKED_IPV4: Array<[string, number]> = [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['224.0.0.0', 4],
  ['240.0.0.0', 4],
];
const BLOCKED_IPV6: Array<[string, number]> = [
  ['::', 128],
  ['::1', 128],
  ['fc00::', 7],
  ['fe80::', 10],
  ['fec0::', 10],
  ['ff00::', 8],
];

const blocked = new BlockList();
for (const [network, prefix] of BLOCKED_IPV4) blocked.addSubnet(network, prefix, 'ipv4');
for (const [network, prefix] of BLOCKED_IPV6) blocked.addSubnet(network, prefix, 'ipv6');

/** Names that reach the machine itself or a cloud metadata service whatever DNS says. */
const BLOCKED_NAMES = /^(localhost|.*\.localhost|metadata|metadata\.google\.internal|instance-data(\.ec2\.internal)?)$/;

/** IPv4 carried inside IPv6 (mapped `::ffff:a.b.c.d` and NAT64 `64:ff9b::a.b.c.d`) is judged as that IPv4. */
function embeddedIpv4(ip: string): string | undefined {
  const dotted = /^(?:::ffff:|64:ff9b::)(\d+\.\d+\.\d+\.\d+)$/i.exec(ip)?.[1];
  if (dotted) return dotted;
  const hex = /^(?:::ffff:|64:ff9b::)([0-9a-f]{1,4}):([0-9a-f]{1,4})$/i.exec(ip);
  if (!hex) return undefined;
  const high = Number.parseInt(hex[1]!, 16);
  const low = Number.parseInt(hex[2]!, 16);
  return [high >> 8, high & 255, low >> 8, low & 255].join('.');
}

/**
 * Whether an IP address is loopback, private, link-local (which holds the cloud metadata services), CGNAT,
 * multicast, reserved or unspecified: somewhere a webhook must not be sent, because it would reach the operator's
 * own network instead of the Internet. The delivery worker asks this again of the address it actually connects to.
 */
export function isPrivateAddress(ip: string): boolean {
  const v4 = embeddedIpv4(ip) ?? ip;
  const family = isIP(v4);
  if (family === 0) return true;
  return blocked.check(v4, family === 4 ? 'ipv4' : 'ipv6');
}

export interface UrlGuardOptions {
  /** WEBHOOK_ALLOW_PRIVATE: lifts the guard for tests and LAN setups. */
  allowPrivate: boolean;
  dns: Pick<DnsLookup, 'addresses'>;
}

/**
 * Why a webhook URL may not be used, or undefined when it may. The host is refused when it is a blocked name, a
 * blocked IP literal, or a name that resolves to any blocked address. A name that does not resolve, or whose lookup
 * fails, is let through: nothing can be sent to it now, and the delivery worker checks the address it connects to.
 */
export async function publicUrlProblem(url: string, options: UrlGuardOptions): Promise<string | undefined> {
  if (options.allowPrivate) return undefined;
  const host = urlHost(new URL(url)).replace(/\.$/, '').toLowerCase();
  const refused = `Webhook URL must not point to a loopback, private, link-local or metadata address (${host})`;
  if (BLOCKED_NAMES.test(host)) return refused;
  if (isIP(host)) return isPrivateAddress(host) ? refused : undefined;
  let addresses: string[];
  try {
    addresses = await options.dns.addresses(host);
  } catch {
    return undefined;
  }
  const internal = addresses.find(isPrivateAddress);
  return internal
    ? `Webhook URL must not point to a loopback, private, link-local or metadata address (${host} resolves to ${internal})`
    : undefined;
}

/** Throws the spec's 400 `Invalid configuration` when `publicUrlProblem` finds one. */
export async function assertPublicUrl(url: string, options: UrlGuardOptions): Promise<void> {
  const problem = await publicUrlProblem(url, options);
  if (problem) throw new Invalid('Invalid configuration', { details: problem });
}
