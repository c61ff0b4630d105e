import { Type } from 'typebox';
import type { DnsRecord, DomainDetail } from '../../../domains/index.ts';
import { DateTime, Nullable } from '../../schemas.ts';
import { RecordCheckStatus, recordCheckStatus } from '../../shared/presenters/domains.ts';

/**
 * `@inboundemail/sdk`'s `domain.verify` / `domain.checkStatus` (`POST`/`PATCH /api/v2/domains/{id}/auth`), in
 * Inbound's shapes. Mailroom verifies by DNS alone: the SES identity, DKIM and MAIL FROM fields have no subject here
 * and answer null, false or empty.
 */

const Status = Type.Union([Type.Literal('pending'), Type.Literal('verified'), Type.Literal('failed')]);
const NoSes = Type.Null({ description: 'Mailroom has no SES identity' });

export const DomainAuthSetupSchema = Type.Object({
  success: Type.Boolean(),
  domain: Type.String(),
  sesIdentityStatus: NoSes,
  dkimEnabled: Type.Boolean({ description: 'Always false: Mailroom receives mail and signs none' }),
  dkimTokens: Type.Array(Type.String(), { description: 'Always empty' }),
  mailFromDomain: NoSes,
  mailFromStatus: NoSes,
  records: Type.Array(
    Type.Object({
      type: Type.String(),
      name: Type.String(),
      value: Type.String(),
      priority: Type.Optional(Type.Integer()),
      isRequired: Type.Boolean(),
      isVerified: Type.Boolean(),
      description: Nullable(Type.String()),
    }),
  ),
  message: Type.String(),
});

export const DomainAuthStatusSchema = Type.Object({
  success: Type.Boolean(),
  domain: Type.String(),
  overallStatus: Status,
  dnsRecords: Type.Array(
    Type.Object({
      type: Type.String(),
      name: Type.String(),
      value: Type.String(),
      isRequired: Type.Boolean(),
      isVerified: Type.Boolean(),
      status: RecordCheckStatus,
      lastChecked: Nullable(DateTime),
      error: Type.Optional(Type.String()),
    }),
  ),
  sesStatus: Type.Object({
    identityStatus: NoSes,
    identityVerified: NoSes,
    dkimStatus: NoSes,
    dkimVerified: NoSes,
    dkimTokens: Type.Array(Type.String(), { description: 'Always empty' }),
    mailFromDomain: NoSes,
    mailFromStatus: NoSes,
    mailFromVerified: NoSes,
  }),
  summary: Type.Object({
    totalRecords: Type.Integer(),
    verifiedRecords: Type.Integer(),
    requiredRecords: Type.Integer(),
    verifiedRequiredRecords: Type.Integer(),
  }),
  message: Type.String(),
  nextSteps: Type.Optional(Type.Array(Type.String(), { description: 'While required records are missing' })),
});

export function presentDomainAuthSetup(domain: DomainDetail, records: DnsRecord[]) {
  return {
    success: true,
    domain: domain.domain,
    sesIdentityStatus: null,
    dkimEnabled: false,
    dkimTokens: [],
    mailFromDomain: null,
    mailFromStatus: null,
    records: records.map((record) => ({
      type: record.recordType,
      name: record.name,
      value: record.value,
      ...(record.priority === null ? {} : { priority: record.priority }),
      isRequired: record.isRequired,
      isVerified: record.isVerified,
      description: record.description,
    })),
    message:
      domain.status === 'verified'
        ? `${domain.domain} is verified. Mailroom needs no DKIM or MAIL FROM setup to receive mail.`
        : `Publish the records below; Mailroom checks them in the background, or now with PATCH /domains/${domain.id}/auth.`,
  };
}

export function presentDomainAuthStatus(domain: DomainDetail, records: DnsRecord[]) {
  const required = records.filter((record) => record.isRequired);
  const missing = required.filter((record) => !record.isVerified);
  return {
    success: true,
    domain: domain.domain,
    overallStatus: domain.status,
    dnsRecords: records.map((record) => ({
      type: record.recordType,
      name: record.name,
      value: record.value,
      isRequired: record.isRequired,
      isVerified: record.isVerified,
      status: recordCheckStatus(record.isVerified),
      lastChecked: record.lastChecked,
      ...(record.lastError === null ? {} : { error: record.lastError }),
    })),
    sesStatus: {
      identityStatus: null,
      identityVerified: null,
      dkimStatus: null,
      dkimVerified: null,
      dkimTokens: [],
      mailFromDomain: null,
      mailFromStatus: null,
      mailFromVerified: null,
    },
    summary: {
      totalRecords: records.length,
      verifiedRecords: records.filter((record) => record.isVerified).length,
      requiredRecords: required.length,
      verifiedRequiredRecords: required.length - missing.length,
    },
    message:
      domain.status === 'verified'
        ? domain.canReceiveEmails
          ? `${domain.domain} is verified and can receive email.`
          : `${domain.domain} is verified; its MX record is missing, so it cannot receive email.`
        : `${required.length - missing.length} of ${required.length} required DNS records are verified.`,
    ...(missing.length > 0
      ? { nextSteps: missing.map((record) => `Publish ${record.recordType} ${record.name} with value ${record.value}`) }
      : {}),
  };
}
