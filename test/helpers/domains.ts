import assert from 'node:assert/strict';
import type { DnsServer } from './dns-server.ts';
import type { ApiClient } from './http.ts';

/**
 * Adds `name` through the API, publishes its required records on the loopback DNS server and runs a check, so the
 * domain is verified the way a user's would be. Returns the domain as the v2 read shows it.
 */
export async function createVerifiedDomain(api: ApiClient, dns: DnsServer, name: string) {
  const created = await api.post('/api/v2/domains', { domain: name });
  assert.equal(created.status, 201, JSON.stringify(created.body));
  publishRequiredRecords(dns, created.body.dnsRecords);
  const checked = await api.get(`/api/v2/domains/${created.body.id}?check=true`);
  assert.equal(checked.body.status, 'verified', JSON.stringify(checked.body.verificationCheck));
  return checked.body as { id: string; domain: string; status: string };
}

/** Serves a new domain's required records (as the create answer lists them) from the loopback DNS server. */
export function publishRequiredRecords(
  dns: DnsServer,
  records: Array<{ type: string; name: string; value: string; isRequired: boolean }>,
) {
  for (const record of records) {
    if (!record.isRequired) continue;
    if (record.type === 'MX') {
      const [priority, exchange] = record.value.split(' ');
      dns.add(record.name, { type: 'MX', exchange: exchange!, priority: Number(priority) });
    } else {
      dns.add(record.name, { type: 'TXT', data: record.value });
    }
  }
}
