export { startDomainVerifier } from './domain-verifier.ts';
export {
  type CreatedDomain,
  type DnsRecord,
  type Domain,
  type DomainDetail,
  type DomainListQuery,
  type DomainStatus,
  DomainsService,
  type EndpointDirectory,
  type EndpointSummary,
  type VerificationCheck,
} from './domains-service.ts';
