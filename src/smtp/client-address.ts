import { isIPv6 } from 'node:net';

/**
 * What a client's limits (connections per address, messages per minute) count under: its IPv4 address, or the /64
 * network of its IPv6 address. A host given an IPv6 /64, as most are, has billions of addresses to change between,
 * so counting each address alone would let it pass any limit.
 */
export function clientKey(address: string): string {
  if (!isIPv6(address)) return address;
  let text = address.split('%')[0]!;
  // An IPv4 address written at the end (64:ff9b::192.0.2.1) is the last two groups.
  const ipv4 = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(text);
  if (ipv4) {
    const [a, b, c, d] = ipv4.slice(1).map(Number) as [number, number, number, number];
    text = `${text.slice(0, ipv4.index)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head, tail] = text.split('::') as [string, string | undefined];
  const left = head ? head.split(':') : [];
  const right = tail ? tail.split(':') : [];
  const groups = tail === undefined ? left : [...left, ...Array(8 - left.length - right.length).fill('0'), ...right];
  return `${groups
    .slice(0, 4)
    .map((group) => Number.parseInt(group, 16).toString(16))
    .join(':')}::/64`;
}

/**
 * How many of `connections` (in arrival order, each forgotten as it closes) are from `session`'s client and arrived
 * before it: refusing a connection with as many as the cap refuses the newest ones over it.
 */
export function earlierFromSameClient(
  connections: Iterable<{ id: string; remoteAddress: string }>,
  session: { id: string; remoteAddress: string },
): number {
  const client = clientKey(session.remoteAddress);
  let earlier = 0;
  for (const connection of connections) {
    if (connection.id === session.id) break;
    if (clientKey(connection.remoteAddress) === client) earlier++;
  }
  return earlier;
}
