export type { PlannedRecord } from './dns-records.ts';
export type { VerificationObserver } from './domain-checker.ts';
export { DomainHealth, type DomainRecheck, type ReceivingDomain } from './domain-health.ts';
export type {
  CatchAllUpdate,
  CreatedDomain,
  DnsRecord,
  Domain,
  DomainDetail,
  DomainListQuery,
  DomainStatus,
  EndpointDirectory,
  EndpointSummary,
  VerificationCheck,
} from './domain-model.ts';
export { startDomainVerifier } from './domain-verifier.ts';
export { DomainsService } from './domains-service.ts';
