import type { DnsLookup } from '../dns/index.ts';
import { parentDomains } from './domain-name.ts';

export interface DetectedProvider {
  name: string;
  confidence: 'high' | 'medium' | 'low';
}

const PROVIDERS: ReadonlyArray<{ name: string; nameservers: string[] }> = [
  { name: 'Cloudflare', nameservers: ['cloudflare.com', 'cloudflare.net'] },
  { name: 'Namecheap', nameservers: ['registrar-servers.com', 'namecheaphosting.com'] },
  { name: 'GoDaddy', nameservers: ['domaincontrol.com', 'secureserver.net'] },
  { name: 'AWS Route 53', nameservers: ['awsdns'] },
  { name: 'Google Domains', nameservers: ['googledomains.com', 'google.com'] },
  { name: 'Vercel', nameservers: ['vercel-dns.com'] },
  { name: 'DigitalOcean', nameservers: ['digitalocean.com'] },
  { name: 'Netlify', nameservers: ['nsone.net', 'netlify.com'] },
  { name: 'DNSimple', nameservers: ['dnsimple.com'] },
  { name: 'Hover', nameservers: ['hover.com'] },
  { name: 'Porkbun', nameservers: ['porkbun.com'] },
  { name: 'Squarespace', nameservers: ['squarespacedns.com'] },
  { name: 'Hetzner', nameservers: ['hetzner.com', 'hetzner.de'] },
  { name: 'Gandi', nameservers: ['gandi.net'] },
  { name: 'OVHcloud', nameservers: ['ovh.net'] },
  { name: 'Azure DNS', nameservers: ['azure-dns'] },
];

const CUSTOM = 'Custom DNS Provider';

function match(nameservers: string[]): string | undefined {
  const lower = nameservers.map((ns) => ns.toLowerCase());
  return PROVIDERS.find((p) => p.nameservers.some((needle) => lower.some((ns) => ns.includes(needle))))?.name;
}

/**
 * Names the DNS host from NS records. A known provider on the domain itself is `high`; unknown nameservers on the
 * domain are `medium`; when the domain has none, its nearest parent with NS records decides, one level less sure
 * (a known provider is `medium`, unknown nameservers `low`). No NS anywhere gives undefined.
 */
export async function detectProvider(dns: DnsLookup, domain: string): Promise<DetectedProvider | undefined> {
  const own = await dns.ns(domain);
  if (own.length > 0) {
    const name = match(own);
    return name ? { name, confidence: 'high' } : { name: CUSTOM, confidence: 'medium' };
  }
  for (const parent of parentDomains(domain)) {
    const inherited = await dns.ns(parent);
    if (inherited.length === 0) continue;
    const name = match(inherited);
    return name ? { name, confidence: 'medium' } : { name: CUSTOM, confidence: 'low' };
  }
  return undefined;
}
