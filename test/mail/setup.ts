import assert from 'node:assert/strict';
import { startTestApp, type TestApp, type TestAppOptions } from '../helpers/app.ts';
import { type DnsServer, startDnsServer } from '../helpers/dns-server.ts';
import { createVerifiedDomain } from '../helpers/domains.ts';
import { type ApiClient, apiClient } from '../helpers/http.ts';
import { type SendMailOptions, sendMail } from '../helpers/smtp.ts';

export interface MailWorld {
  dns: DnsServer;
  server: TestApp;
  api: ApiClient;
  /** Sends one message over SMTP to the app and returns the ids of the stored emails (one per recipient). */
  deliver(options: Omit<SendMailOptions, 'port'>): Promise<string[]>;
  close(): Promise<void>;
}

/**
 * A running Mailroom with verified domains (through loopback DNS) and an active address for each of `addresses`,
 * created through the API, so mail sent over SMTP is stored the way a user's would be.
 */
export async function startMailWorld(
  addresses: string[],
  env: Record<string, string> = {},
  options: TestAppOptions = {},
): Promise<MailWorld> {
  const dns = await startDnsServer();
  const server = await startTestApp({ DNS_SERVERS: dns.address, ...env }, options);
  const api = apiClient(server.baseUrl, server.apiKey);
  const domainIds = new Map<string, string>();
  for (const address of addresses) {
    const domain = address.split('@')[1]!;
    if (!domainIds.has(domain)) domainIds.set(domain, (await createVerifiedDomain(api, dns, domain)).id);
    const created = await api.post('/api/v2/email-addresses', { address, domainId: domainIds.get(domain) });
    assert.equal(created.status, 201, JSON.stringify(created.body));
  }
  return {
    dns,
    server,
    api,
    async deliver(options) {
      const result = await sendMail({ port: server.smtpPort, ...options });
      assert.equal(result.ok, true, result.response);
      assert.ok(result.queuedIds.length > 0, result.response);
      return result.queuedIds;
    },
    async close() {
      await server.close();
      await dns.close();
    },
  };
}

/** A raw RFC 5322 message with CRLF line ends, for headers nodemailer would rewrite (Date, Message-ID, References). */
export function rawMessage(headers: Record<string, string>, body: string): string {
  const lines = Object.entries(headers).map(([name, value]) => `${name}: ${value}`);
  return `${[...lines, 'MIME-Version: 1.0', ''].join('\r\n')}\r\n${body.replace(/\r?\n/g, '\r\n')}`;
}
