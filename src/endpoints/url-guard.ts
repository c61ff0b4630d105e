import { BlockList, isIP } from 'node:net';
import { networkInterfaces } from 'node:os';
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
  // Documentation (RFC 5737): not on the Internet, so only a network that reuses them inside could answer.
  ['192.0.2.0', 24],
  ['198.51.100.0', 24],
  ['203.0.113.0', 24],
  // Azure's WireServer, a public address each Azure VM reaches for its platform: goal state, certificates, extensions.
  ['168.63.129.16', 32],
];
/**
 * Global unicast blocks that are not on the Internet all the same. Everything outside 2000::/3 is refused anyway:
 * loopback, unspecified, unique-local (fc00::/7), link-local, site-local, multicast, local-use NAT64 (64:ff9b:1::/48,
 * whose IPv4 address may sit anywhere from /48 to /96), discard-only (100::/64), SRv6 SIDs (5f00::/16) and the
 * space the IETF keeps reserved.
 */
const BLOCKED_IPV6: Array<[string, number]> = [
  // Teredo: the IPv4 address inside is obfuscated, so there is nothing to check.
  ['2001::', 32],
  // Benchmarking, ORCHID, and documentation (RFC 3849, RFC 9637).
  ['2001:2::', 48],
  ['2001:10::', 28],
  ['2001:db8::', 32],
  ['3fff::', 20],
];

const blocked = new BlockList();
for (const [network, prefix] of BLOCKED_IPV4) blocked.addSubnet(network, prefix, 'ipv4');
for (const [network, prefix] of BLOCKED_IPV6) blocked.addSubnet(network, prefix, 'ipv6');
/** IPv6's global unicast space (RFC 4291): every address of the IPv6 Internet lies in it. */
const globalUnicast = new BlockList();
globalUnicast.addSubnet('2000::', 3, 'ipv6');

/** Names that reach the machine itself or a cloud metadata service whatever DNS says. */
const BLOCKED_NAMES = /^(localhost|.*\.localhost|metadata|metadata\.google\.internal|instance-data(\.ec2\.internal)?)$/;

/**
 * IPv6 ranges that carry an IPv4 address, which is where a connection really goes: IPv4-compatible (::/96), mapped
 * (::ffff:0:0/96), SIIT (::ffff:0:0:0/96), NAT64's well-known prefix (64:ff9b::/96) and 6to4 (2002::/16). Each is
 * the prefix's leading bytes and where the IPv4 address starts.
 */
const IPV4_CARRIERS: Array<{ prefix: number[]; offset: number }> = [
  { prefix: [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0], offset: 12 },
  { prefix: [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff], offset: 12 },
  { prefix: [0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0, 0], offset: 12 },
  { prefix: [0, 0x64, 0xff, 0x9b, 0, 0, 0, 0, 0, 0, 0, 0], offset: 12 },
  { prefix: [0x20, 0x02], offset: 2 },
];

/** The 16 bytes of an address `isIP` accepted as IPv6. */
function ipv6Bytes(ip: string): number[] {
  let text = ip.replace(/%.*$/, '');
  const dotted = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(text);
  if (dotted) {
    const [a, b, c, d] = dotted.slice(1).map(Number) as [number, number, number, number];
    text = `${text.slice(0, dotted.index)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const groups = (part: string | undefined) => (part ? part.split(':').map((group) => Number.parseInt(group, 16)) : []);
  const [head, tail] = text.split('::');
  const before = groups(head);
  const after = groups(tail);
  const words = [...before, ...new Array<number>(8 - before.length - after.length).fill(0), ...after];
  return words.flatMap((word) => [word >> 8, word & 255]);
}

function embeddedIpv4(ip: string): string | undefined {
  const bytes = ipv6Bytes(ip);
  const carrier = IPV4_CARRIERS.find(({ prefix }) => prefix.every((byte, i) => bytes[i] === byte));
  return carrier && bytes.slice(carrier.offset, carrier.offset + 4).join('.');
}

/**
 * Whether an IP address is loopback, private, link-local (which holds the cloud metadata services), CGNAT,
 * multicast, reserved or unspecified, one of the machine's own, or an IPv6 address carrying such an IPv4 address:
 * somewhere a webhook or a forward must not go, because it would reach the operator's own network instead of the
 * Internet. The delivery worker asks this again of every address it actually connects to.
 */
export function isPrivateAddress(ip: string): boolean {
  const family = isIP(ip);
  if (family === 4) return blocked.check(ip, 'ipv4') || ownAddresses().check(ip, 'ipv4');
  if (family !== 6) return true;
  // A prefix that carries an IPv4 address goes where that address goes, inside 2000::/3 or not.
  const v4 = embeddedIpv4(ip);
  if (v4 !== undefined) return blocked.check(v4, 'ipv4') || ownAddresses().check(v4, 'ipv4');
  return !globalUnicast.check(ip, 'ipv6') || blocked.check(ip, 'ipv6') || ownAddresses().check(ip, 'ipv6');
}

/**
 * How long the machine's own addresses are kept before they are read again: interfaces come and go rarely, and
 * reading them is a system call's work on every address a delivery connects to.
 */
const OWN_ADDRESSES_MS = 5_000;
let own: { readAt: number; addresses: BlockList } | undefined;

/**
 * The machine's own addresses, public ones too: a connection there reaches its services from inside, past any
 * firewall in front of it.
 */
function ownAddresses(): BlockList {
  const now = Date.now();
  if (own && now - own.readAt < OWN_ADDRESSES_MS) return own.addresses;
  const addresses = new BlockList();
  for (const address of Object.values(networkInterfaces()).flat()) {
    if (address) addresses.addAddress(address.address.replace(/%.*$/, ''), address.family === 'IPv4' ? 'ipv4' : 'ipv6');
  }
  own = { readAt: now, addresses };
  return addresses;
}

export interface UrlGuardOptions {
  /** ALLOW_PRIVATE_DESTINATIONS (or WEBHOOK_ALLOW_PRIVATE): lifts the guard for tests and LAN setups. */
  allowPrivate: boolean;
  dns: Pick<DnsLookup, 'hostAddresses'>;
}

/**
 * Why a webhook URL may not be used, or undefined when it may. The host is refused when it is a blocked name, a
 * blocked IP literal, or a name whose addresses (DNS, or /etc/hosts when DNS has none) include a blocked one. A name that does not resolve, or
 * whose lookups fail, is let through: nothing can be sent to it now, and the delivery worker checks the address it
 * connects to.
 */
async function publicUrlProblem(url: string, options: UrlGuardOptions): Promise<string | undefined> {
  if (options.allowPrivate) return undefined;
  const host = urlHost(new URL(url)).replace(/\.$/, '').toLowerCase();
  const refused = `Webhook URL must not point to a loopback, private, link-local or metadata address (${host})`;
  if (BLOCKED_NAMES.test(host)) return refused;
  if (isIP(host)) return isPrivateAddress(host) ? refused : undefined;
  // The addresses delivery will connect to, found the same way.
  const addresses = await options.dns.hostAddresses(host).catch(() => []);
  const internal = addresses.find(isPrivateAddress);
  return internal
    ? `Webhook URL must not point to a loopback, private, link-local or metadata address (${host} resolves to ${internal})`
    : undefined;
}

/**
 * The guard at connect time: why a webhook request or direct forward may not connect to `ip`, or undefined when it
 * may. Saved URLs and addresses were checked, but a name's DNS answer can turn internal after that.
 */
export function connectionGuard(allowPrivate: boolean): (ip: string) => string | undefined {
  return (ip) =>
    !allowPrivate && isPrivateAddress(ip)
      ? 'loopback, private, link-local and reserved addresses are not allowed (ALLOW_PRIVATE_DESTINATIONS)'
      : undefined;
}

/** The guard refuses private destinations unless the deployment allows them; the refusal says how. */
const ALLOW_HINT = 'set ALLOW_PRIVATE_DESTINATIONS=true to allow private destinations';

/** Throws the spec's 400 `Invalid configuration` when `publicUrlProblem` finds one. */
export async function assertPublicUrl(url: string, options: UrlGuardOptions): Promise<void> {
  const problem = await publicUrlProblem(url, options);
  if (problem) throw new Invalid('Invalid configuration', { details: `${problem}; ${ALLOW_HINT}` });
}

/**
 * Throws the spec's 400 `Invalid configuration` when a forward address's domain is a blocked name or an internal IP
 * address, bare or as a `[...]` literal. A domain whose MX hosts resolve to internal addresses is caught at delivery,
 * which checks every address it connects to.
 */
export function assertPublicForwardAddress(address: string, allowPrivate: boolean): void {
  if (allowPrivate) return;
  const domain = address
    .slice(address.lastIndexOf('@') + 1)
    .replace(/\.$/, '')
    .replace(/^\[(?:ipv6:)?(.*)\]$/i, '$1');
  // The URL parser reads the shorthand IPv4 spellings (`127.1`, `0x7f.1`) that the system resolver accepts too.
  const host = isIP(domain) || !URL.canParse(`http://${domain}/`) ? domain : new URL(`http://${domain}/`).hostname;
  if (BLOCKED_NAMES.test(host) || (isIP(host) && isPrivateAddress(host))) {
    throw new Invalid('Invalid configuration', {
      details: `Forward address must not point to a loopback, private, link-local or metadata address (${address}); ${ALLOW_HINT}`,
    });
  }
}
