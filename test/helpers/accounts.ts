import { startTestApp, type TestApp } from './app.ts';
import { type DnsServer, startDnsServer } from './dns-server.ts';
import { type ApiClient, apiClient } from './http.ts';

export interface TwoAccounts {
  dns: DnsServer;
  server: TestApp;
  /** The default account's client. */
  api: ApiClient;
  /** A second account's client, for isolation checks. */
  other: ApiClient;
  close(): Promise<void>;
}

/** A Mailroom that resolves through loopback DNS, with clients for its default account and for `otherName`. */
export async function startWithTwoAccounts(otherName = 'other'): Promise<TwoAccounts> {
  const dns = await startDnsServer();
  const server = await startTestApp({ DNS_SERVERS: dns.address });
  return {
    dns,
    server,
    api: apiClient(server.baseUrl, server.apiKey),
    other: apiClient(server.baseUrl, await server.newAccountKey(otherName)),
    async close() {
      await server.close();
      await dns.close();
    },
  };
}
