export { createDnsLookup, type DnsLookup, type MxRecord } from './resolver.ts';
