import type { DnsLookup } from '../dns/index.ts';

export interface PlannedRecord {
  recordType: 'TXT' | 'MX';
  name: string;
  value: string;
  priority: number | null;
  description: string;
  isRequired: boolean;
}

export interface RecordCheck {
  isVerified: boolean;
  error?: string;
}

const VERIFICATION_LABEL = '_mailroom';
/** How a record's error begins when DNS could not be asked (timeout, SERVFAIL), rather than answered otherwise. */
export const LOOKUP_FAILED = 'DNS lookup failed';
const MX_PRIORITY = 10;

function bareHost(host: string): string {
  return host.trim().toLowerCase().replace(/\.$/, '');
}

export function mxRecord(domain: string, mxHost: string): PlannedRecord {
  return {
    recordType: 'MX',
    name: domain,
    value: `${MX_PRIORITY} ${mxHost}`,
    priority: MX_PRIORITY,
    description: 'Inbound email routing: points mail for the domain at Mailroom',
    isRequired: true,
  };
}

/** Points mail for every subdomain of `domain` at Mailroom, for a root that includes its subdomains. */
export function wildcardMxRecord(domain: string, mxHost: string): PlannedRecord {
  return {
    ...mxRecord(`*.${domain}`, mxHost),
    description: 'Inbound email routing for subdomains: points mail for every subdomain at Mailroom',
  };
}

function spfValue(mxHost: string): string {
  return `v=spf1 a:${mxHost} ~all`;
}

/**
 * What a stored record asks for with the MX host configured now: the MX record and our SPF record name the host, so
 * they follow a change of MX_HOST; every other record (the verification token among them) keeps its value.
 */
export function valueForMxHost(record: { recordType: string; name: string; value: string }, mxHost: string): string {
  if (record.recordType === 'MX') return mxRecord(record.name, mxHost).value;
  if (record.recordType === 'TXT' && record.value.startsWith('v=spf1 a:')) return spfValue(mxHost);
  return record.value;
}

/** The four records a new top-level domain is asked to publish (a subdomain of a verified parent only needs MX). */
export function plannedRecords(domain: string, mxHost: string, verificationToken: string): PlannedRecord[] {
  return [
    {
      recordType: 'TXT',
      name: `${VERIFICATION_LABEL}.${domain}`,
      value: `mailroom-verification=${verificationToken}`,
      priority: null,
      description: 'Domain ownership verification',
      isRequired: true,
    },
    mxRecord(domain, mxHost),
    {
      recordType: 'TXT',
      name: domain,
      value: spfValue(mxHost),
      priority: null,
      description: 'SPF: lets Mailroom send forwards for the domain (recommended)',
      isRequired: false,
    },
    {
      recordType: 'TXT',
      name: `_dmarc.${domain}`,
      value: `v=DMARC1; p=none; rua=mailto:dmarc@${domain}`,
      priority: null,
      description: 'DMARC policy (recommended)',
      isRequired: false,
    },
  ];
}

/**
 * Checks one record against live DNS, more leniently than an exact string match: MX at any priority with the host
 * compared case-insensitively and without its trailing dot; TXT records with their strings joined; an SPF record
 * that merely contains our mechanism among others; any DMARC policy.
 */
export async function checkRecord(
  dns: DnsLookup,
  record: { recordType: string; name: string; value: string },
): Promise<RecordCheck> {
  try {
    if (record.recordType === 'MX') {
      const expected = bareHost(record.value.split(/\s+/).pop() ?? '');
      const found = await dns.mx(record.name);
      if (found.some((mx) => bareHost(mx.exchange) === expected)) return { isVerified: true };
      return {
        isVerified: false,
        error:
          found.length === 0
            ? 'No MX records found'
            : `MX points to ${found.map((mx) => bareHost(mx.exchange)).join(', ')}, expected ${expected}`,
      };
    }
    const texts = (await dns.txt(record.name)).map((text) => text.trim());
    if (record.value.startsWith('v=spf1')) {
      const mechanism = record.value.split(/\s+/)[1]!.toLowerCase();
      const spf = texts.find((text) => /^v=spf1(\s|$)/i.test(text));
      if (!spf) return { isVerified: false, error: 'No SPF record found' };
      const terms = spf
        .toLowerCase()
        .split(/\s+/)
        .map((term) => term.replace(/^\+/, ''));
      return terms.includes(mechanism)
        ? { isVerified: true }
        : { isVerified: false, error: `SPF record does not include ${mechanism}` };
    }
    if (record.value.startsWith('v=DMARC1')) {
      return texts.some((text) => /^v=dmarc1\s*;/i.test(text))
        ? { isVerified: true }
        : { isVerified: false, error: 'No DMARC record found' };
    }
    return texts.includes(record.value)
      ? { isVerified: true }
      : { isVerified: false, error: texts.length === 0 ? 'No TXT records found' : 'TXT record value does not match' };
  } catch (error) {
    return { isVerified: false, error: `${LOOKUP_FAILED}: ${(error as NodeJS.ErrnoException).code ?? 'error'}` };
  }
}

export interface DnsConflict {
  hasConflict: boolean;
  message: string;
  conflictType?: 'mx' | 'cname' | 'both';
  existingRecords?: Array<{ type: string; value: string }>;
}

/** Existing MX records pointing elsewhere, or a CNAME at the name, would keep mail from reaching Mailroom. */
export async function findDnsConflict(dns: DnsLookup, domain: string, mxHost: string): Promise<DnsConflict> {
  try {
    const [mx, cname] = await Promise.all([dns.mx(domain), dns.cname(domain)]);
    const foreignMx = mx.filter((record) => bareHost(record.exchange) !== bareHost(mxHost));
    const existingRecords = [
      ...foreignMx.map((record) => ({ type: 'MX', value: `${record.priority} ${bareHost(record.exchange)}` })),
      ...cname.map((target) => ({ type: 'CNAME', value: bareHost(target) })),
    ];
    if (existingRecords.length === 0) return { hasConflict: false, message: 'No conflicting DNS records found' };
    const conflictType = foreignMx.length > 0 && cname.length > 0 ? 'both' : foreignMx.length > 0 ? 'mx' : 'cname';
    const message =
      conflictType === 'cname'
        ? 'Domain has a CNAME record, which cannot coexist with MX records'
        : `Domain has ${foreignMx.length} MX record(s) - email already configured. Replace them with the MX record below to receive mail with Mailroom.`;
    return { hasConflict: true, conflictType, message, existingRecords };
  } catch (error) {
    return {
      hasConflict: false,
      message: `Could not check for conflicts: DNS lookup failed (${(error as NodeJS.ErrnoException).code ?? 'error'})`,
    };
  }
}
