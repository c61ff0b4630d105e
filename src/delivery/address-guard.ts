import { BlockList, isIPv4 } from 'node:net';
import type { AddressGuard } from './http-sender.ts';

const PRIVATE_RANGES: Array<[string, number, 'ipv4' | 'ipv6']> = [
  ['0.0.0.0', 8, 'ipv4'],
  ['10.0.0.0', 8, 'ipv4'],
  ['100.64.0.0', 10, 'ipv4'],
  ['127.0.0.0', 8, 'ipv4'],
  ['169.254.0.0', 16, 'ipv4'],
  ['172.16.0.0', 12, 'ipv4'],
  ['192.168.0.0', 16, 'ipv4'],
  ['::', 128, 'ipv6'],
  ['::1', 128, 'ipv6'],
  ['fc00::', 7, 'ipv6'],
  ['fe80::', 10, 'ipv6'],
];

/**
 * The connect-time SSRF rule for webhooks: loopback, private, link-local (cloud metadata) and unspecified addresses
 * are refused unless WEBHOOK_ALLOW_PRIVATE is set. IPv4-mapped IPv6 addresses are judged by their IPv4 part.
 */
export function webhookAddressGuard(allowPrivate: boolean): AddressGuard {
  if (allowPrivate) return () => undefined;
  const blocked = new BlockList();
  for (const [network, prefix, family] of PRIVATE_RANGES) blocked.addSubnet(network, prefix, family);
  return (ip) => {
    const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(ip)?.[1];
    const address = mapped ?? ip;
    const family = isIPv4(address) ? 'ipv4' : 'ipv6';
    return blocked.check(address, family)
      ? 'private, loopback and link-local addresses are not allowed (WEBHOOK_ALLOW_PRIVATE)'
      : undefined;
  };
}
