import type { Db, DnsRecordsTable, DomainsTable } from '../db/index.ts';
import { fromFlag } from '../db/index.ts';
import type { DnsConflict } from './dns-records.ts';

export type DomainStatus = DomainsTable['status'];

export interface EndpointSummary {
  id: string;
  name: string;
  type: string;
  isActive: boolean;
}

/** How domains learn about endpoints without depending on the endpoints capability. */
export interface EndpointDirectory {
  summary(accountId: string, endpointId: string): Promise<EndpointSummary | undefined>;
  /** Reads the endpoint in `trx`, which stores a reference to it, and keeps it from deletion until that commits. */
  hold(trx: Db, accountId: string, endpointId: string): Promise<{ isActive: boolean } | undefined>;
}

export interface Domain {
  id: string;
  accountId: string;
  domain: string;
  status: DomainStatus;
  canReceiveEmails: boolean;
  hasMxRecords: boolean;
  domainProvider: string | null;
  providerConfidence: 'high' | 'medium' | 'low' | null;
  lastDnsCheck: string | null;
  isCatchAllEnabled: boolean;
  catchAllEndpointId: string | null;
  receiveDmarcEmails: boolean;
  includeSubdomains: boolean;
  parentDomain: string | null;
  verifiedAt: string | null;
  createdAt: string;
  updatedAt: string;
}

export interface DomainDetail extends Domain {
  stats: { totalEmailAddresses: number; activeEmailAddresses: number };
  catchAllEndpoint: EndpointSummary | null;
}

export interface DnsRecord {
  id: string;
  domainId: string;
  recordType: DnsRecordsTable['record_type'];
  name: string;
  value: string;
  priority: number | null;
  description: string | null;
  isRequired: boolean;
  isVerified: boolean;
  lastChecked: string | null;
  lastError: string | null;
  createdAt: string;
  updatedAt: string;
}

export interface VerificationCheck {
  dnsRecords: Array<{ type: string; name: string; value: string; isVerified: boolean; error?: string }>;
  isFullyVerified: boolean;
  lastChecked: string;
}

export interface CatchAllUpdate {
  isCatchAllEnabled?: boolean;
  catchAllEndpointId?: string | null;
  /** On a verified root domain: mail to any of its subdomains not registered on its own goes to the catch-all. */
  includeSubdomains?: boolean;
}

export interface CreatedDomain {
  domain: Domain;
  records: DnsRecord[];
  dnsConflict: DnsConflict;
  message: string;
}

export interface DomainListQuery {
  limit: number;
  offset: number;
  status?: DomainStatus;
  canReceive?: boolean;
  check?: boolean;
}

export interface DomainsSettings {
  mxHost: string;
  /** A domain still unverified this long after creation is marked `failed` by the background verifier. */
  giveUpAfterMs: number;
}

export function toDomain(row: DomainsTable, parentName: string | null): Domain {
  return {
    id: row.id,
    accountId: row.account_id,
    domain: row.domain,
    status: row.status,
    canReceiveEmails: fromFlag(row.can_receive_emails),
    hasMxRecords: fromFlag(row.has_mx_records),
    domainProvider: row.domain_provider,
    providerConfidence: row.provider_confidence,
    lastDnsCheck: row.last_dns_check,
    isCatchAllEnabled: fromFlag(row.is_catch_all_enabled),
    catchAllEndpointId: row.catch_all_endpoint_id,
    receiveDmarcEmails: fromFlag(row.receive_dmarc_emails),
    includeSubdomains: fromFlag(row.include_subdomains),
    parentDomain: parentName,
    verifiedAt: row.verified_at,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}

export function toRecord(row: DnsRecordsTable): DnsRecord {
  return {
    id: row.id,
    domainId: row.domain_id,
    recordType: row.record_type,
    name: row.name,
    value: row.value,
    priority: row.priority,
    description: row.description,
    isRequired: fromFlag(row.is_required),
    isVerified: fromFlag(row.is_verified),
    lastChecked: row.last_checked,
    lastError: row.last_error,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}
