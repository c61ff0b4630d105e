import { Type } from 'typebox';
import type {
  CreatedDomain,
  DnsRecord,
  Domain,
  DomainDetail,
  PlannedRecord,
  VerificationCheck,
} from '../../../domains/index.ts';
import { DateTime, Nullable } from '../../schemas.ts';

const Status = Type.Union([Type.Literal('pending'), Type.Literal('verified'), Type.Literal('failed')]);

const CatchAllEndpoint = Type.Object({
  id: Type.String(),
  name: Type.String(),
  type: Type.String(),
  isActive: Type.Boolean(),
});

/** What one check found for a record: `failed` says the record is not (yet) in DNS as published, `error` why. */
export const RecordCheckStatus = Type.Union([Type.Literal('verified'), Type.Literal('failed')]);

const VerificationCheckSchema = Type.Object({
  dnsRecords: Type.Array(
    Type.Object({
      type: Type.String(),
      name: Type.String(),
      value: Type.String(),
      isVerified: Type.Boolean(),
      status: RecordCheckStatus,
      lastChecked: DateTime,
      error: Type.Optional(Type.String()),
    }),
  ),
  sesStatus: Type.String({ description: 'Mailroom has no SES: `Success` once verified, otherwise `Pending`/`Failed`' }),
  isFullyVerified: Type.Boolean(),
  lastChecked: DateTime,
});

/** What every full domain answer starts with: the domain, whether it can receive, and where its DNS is hosted. */
const domainBasics = {
  id: Type.String(),
  domain: Type.String(),
  status: Status,
  canReceiveEmails: Type.Boolean(),
  hasMxRecords: Type.Boolean(),
  domainProvider: Nullable(Type.String()),
  providerConfidence: Nullable(Type.String()),
};

const domainFields = {
  ...domainBasics,
  lastDnsCheck: Nullable(DateTime),
  lastSesCheck: Nullable(DateTime),
  isCatchAllEnabled: Type.Boolean(),
  catchAllEndpointId: Nullable(Type.String()),
  includeSubdomains: Type.Boolean(),
  mailFromDomain: Nullable(Type.String()),
  mailFromDomainStatus: Nullable(Type.String()),
  mailFromDomainVerifiedAt: Nullable(DateTime),
  receiveDmarcEmails: Type.Boolean(),
  createdAt: DateTime,
  updatedAt: DateTime,
  userId: Type.String(),
  catchAllEndpoint: Nullable(CatchAllEndpoint),
  verificationCheck: Type.Optional(VerificationCheckSchema),
};

const itemStats = {
  totalEmailAddresses: Type.Integer(),
  activeEmailAddresses: Type.Integer(),
  hasCatchAll: Type.Boolean(),
};

export const DomainItemSchema = Type.Object({ ...domainFields, stats: Type.Object(itemStats) });

export const DnsRecordSchema = Type.Object({
  id: Type.String(),
  domainId: Type.String(),
  recordType: Type.String(),
  name: Type.String(),
  value: Type.String(),
  priority: Nullable(Type.Integer()),
  description: Nullable(Type.String()),
  isRequired: Type.Boolean(),
  isVerified: Type.Boolean(),
  lastChecked: Nullable(DateTime),
  createdAt: DateTime,
  updatedAt: DateTime,
});

export const DomainDetailSchema = Type.Object({
  ...domainFields,
  stats: Type.Object({
    ...itemStats,
    emailsLast24h: Type.Integer(),
    emailsLast7d: Type.Integer(),
    emailsLast30d: Type.Integer(),
  }),
  dnsRecords: Type.Array(DnsRecordSchema),
  inheritsFromParent: Type.Boolean(),
  parentDomain: Nullable(Type.String()),
});

/** A record to publish, as the create and catch-all answers list it. */
const RecordToPublish = Type.Object({
  type: Type.String(),
  name: Type.String(),
  value: Type.String(),
  description: Type.Optional(Type.String()),
  isRequired: Type.Boolean(),
});

export const CreatedDomainSchema = Type.Object({
  ...domainBasics,
  dnsRecords: Type.Array(RecordToPublish),
  dnsConflict: Type.Object({
    hasConflict: Type.Boolean(),
    message: Type.String(),
    conflictType: Type.Optional(Type.Union([Type.Literal('mx'), Type.Literal('cname'), Type.Literal('both')])),
    existingRecords: Type.Optional(Type.Array(Type.Object({ type: Type.String(), value: Type.String() }))),
  }),
  createdAt: DateTime,
  updatedAt: DateTime,
  parentDomain: Type.Optional(Type.String()),
  message: Type.String(),
});

export const CatchAllUpdateSchema = Type.Object({
  id: Type.String(),
  domain: Type.String(),
  status: Status,
  isCatchAllEnabled: Type.Boolean(),
  catchAllEndpointId: Nullable(Type.String()),
  catchAllEndpoint: Nullable(CatchAllEndpoint),
  includeSubdomains: Type.Boolean(),
  wildcardMxRecord: Type.Union([RecordToPublish, Type.Null()], {
    description: 'With includeSubdomains: the MX record that points mail for every subdomain at Mailroom',
  }),
  updatedAt: DateTime,
});

function sesStatus(domain: DomainDetail): string {
  return domain.status === 'verified' ? 'Success' : domain.status === 'failed' ? 'Failed' : 'Pending';
}

function presentVerificationCheck(domain: DomainDetail, check: VerificationCheck) {
  return {
    ...check,
    dnsRecords: check.dnsRecords.map(({ error, ...record }) => ({
      ...record,
      status: recordCheckStatus(record.isVerified),
      lastChecked: check.lastChecked,
      ...(error === undefined ? {} : { error }),
    })),
    sesStatus: sesStatus(domain),
  };
}

export function recordCheckStatus(isVerified: boolean) {
  return isVerified ? ('verified' as const) : ('failed' as const);
}

function presentDomainBasics(domain: Domain) {
  return {
    id: domain.id,
    domain: domain.domain,
    status: domain.status,
    canReceiveEmails: domain.canReceiveEmails,
    hasMxRecords: domain.hasMxRecords,
    domainProvider: domain.domainProvider,
    providerConfidence: domain.providerConfidence,
  };
}

export function presentDomainItem(domain: DomainDetail, check?: VerificationCheck) {
  return {
    ...presentDomainBasics(domain),
    lastDnsCheck: domain.lastDnsCheck,
    lastSesCheck: domain.lastDnsCheck,
    isCatchAllEnabled: domain.isCatchAllEnabled,
    catchAllEndpointId: domain.catchAllEndpointId,
    includeSubdomains: domain.includeSubdomains,
    mailFromDomain: null,
    mailFromDomainStatus: null,
    mailFromDomainVerifiedAt: null,
    receiveDmarcEmails: domain.receiveDmarcEmails,
    createdAt: domain.createdAt,
    updatedAt: domain.updatedAt,
    userId: domain.accountId,
    stats: { ...domain.stats, hasCatchAll: domain.isCatchAllEnabled },
    catchAllEndpoint: domain.catchAllEndpoint,
    ...(check ? { verificationCheck: presentVerificationCheck(domain, check) } : {}),
  };
}

export function presentDnsRecord(record: DnsRecord) {
  return {
    id: record.id,
    domainId: record.domainId,
    recordType: record.recordType,
    name: record.name,
    value: record.value,
    priority: record.priority,
    description: record.description,
    isRequired: record.isRequired,
    isVerified: record.isVerified,
    lastChecked: record.lastChecked,
    createdAt: record.createdAt,
    updatedAt: record.updatedAt,
  };
}

export function presentDomainDetail(
  domain: DomainDetail,
  records: DnsRecord[],
  emailCounts: { last24h: number; last7d: number; last30d: number },
  check?: VerificationCheck,
) {
  const item = presentDomainItem(domain, check);
  return {
    ...item,
    stats: {
      ...item.stats,
      emailsLast24h: emailCounts.last24h,
      emailsLast7d: emailCounts.last7d,
      emailsLast30d: emailCounts.last30d,
    },
    dnsRecords: records.map(presentDnsRecord),
    inheritsFromParent: domain.parentDomain !== null,
    parentDomain: domain.parentDomain,
  };
}

export function presentCreatedDomain(created: CreatedDomain) {
  const { domain, records } = created;
  return {
    ...presentDomainBasics(domain),
    dnsRecords: records.map(presentRecordToPublish),
    dnsConflict: created.dnsConflict,
    createdAt: domain.createdAt,
    updatedAt: domain.updatedAt,
    ...(domain.parentDomain ? { parentDomain: domain.parentDomain } : {}),
    message: created.message,
  };
}

export function presentCatchAll(domain: DomainDetail, wildcardMxRecord: PlannedRecord | null) {
  return {
    id: domain.id,
    domain: domain.domain,
    status: domain.status,
    isCatchAllEnabled: domain.isCatchAllEnabled,
    catchAllEndpointId: domain.catchAllEndpointId,
    catchAllEndpoint: domain.catchAllEndpoint,
    includeSubdomains: domain.includeSubdomains,
    wildcardMxRecord: wildcardMxRecord && presentRecordToPublish(wildcardMxRecord),
    updatedAt: domain.updatedAt,
  };
}

function presentRecordToPublish(record: {
  recordType: string;
  name: string;
  value: string;
  description: string | null;
  isRequired: boolean;
}) {
  return {
    type: record.recordType,
    name: record.name,
    value: record.value,
    ...(record.description ? { description: record.description } : {}),
    isRequired: record.isRequired,
  };
}
