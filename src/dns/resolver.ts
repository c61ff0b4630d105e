import { lookup, Resolver } from 'node:dns/promises';

export interface MxRecord {
  exchange: string;
  priority: number;
}

/**
 * The DNS questions Mailroom asks. A name with no records answers an empty list; only real failures (timeouts,
 * refused or broken servers) throw, so callers can tell "not there" from "could not ask".
 */
export interface DnsLookup {
  mx(name: string): Promise<MxRecord[]>;
  /** Each record's strings joined, as RFC 7208 says a multi-string TXT record is read. */
  txt(name: string): Promise<string[]>;
  ns(name: string): Promise<string[]>;
  cname(name: string): Promise<string[]>;
  /**
   * A host's addresses as Mailroom connects to it: its A and AAAA records or, when DNS has none, the system
   * resolver's (getaddrinfo, which reads /etc/hosts). DNS is asked first, through c-ares: getaddrinfo holds one of
   * libuv's four threads, which file I/O shares, for as long as a name's servers take to answer or not.
   */
  hostAddresses(name: string): Promise<string[]>;
  /** The raw form mailauth expects for its own SPF, DKIM and DMARC lookups. */
  raw(name: string, rrtype: string): Promise<unknown>;
}

const ABSENT = new Set(['ENODATA', 'ENOTFOUND', 'NXDOMAIN']);

async function orEmpty<T>(lookup: Promise<T[]>): Promise<T[]> {
  try {
    return await lookup;
  } catch (error) {
    if (ABSENT.has((error as NodeJS.ErrnoException).code ?? '')) return [];
    throw error;
  }
}

/** Builds the resolver from DNS_SERVERS (`host` or `host:port`, comma separated); empty means the system's. */
export function createDnsLookup(servers: string[], timeoutMs = 2000): DnsLookup {
  const resolver = new Resolver({ timeout: timeoutMs, tries: 2 });
  if (servers.length > 0) resolver.setServers(servers);
  return {
    mx: (name) => orEmpty(resolver.resolveMx(name)),
    txt: async (name) => (await orEmpty(resolver.resolveTxt(name))).map((chunks) => chunks.join('')),
    ns: (name) => orEmpty(resolver.resolveNs(name)),
    cname: (name) => orEmpty(resolver.resolveCname(name)),
    hostAddresses: async (name) => {
      const [v4, v6] = await Promise.all([orEmpty(resolver.resolve4(name)), orEmpty(resolver.resolve6(name))]);
      if (v4.length > 0 || v6.length > 0) return [...v4, ...v6];
      return (await orEmpty(lookup(name, { all: true }))).map(({ address }) => address);
    },
    raw: (name, rrtype) => resolver.resolve(name, rrtype),
  };
}
