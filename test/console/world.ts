import type { Browser, BrowserContext, Page } from 'playwright-core';
import { startTestApp, type TestApp } from '../helpers/app.ts';
import { type DnsServer, startDnsServer } from '../helpers/dns-server.ts';
import { type ApiClient, apiClient } from '../helpers/http.ts';
import { startWebhookReceiver, type WebhookReceiver } from '../helpers/webhook-receiver.ts';
import { launchBrowser } from './browser.ts';

export interface ConsoleWorld {
  dns: DnsServer;
  receiver: WebhookReceiver;
  server: TestApp;
  api: ApiClient;
  browser: Browser;
  context: BrowserContext;
  /** A desktop-sized page, not signed in yet. */
  page: Page;
  close(): Promise<void>;
}

/** What every console test file starts: Mailroom with a loopback DNS server and webhook receiver, and a browser. */
export async function startConsoleWorld(env: Record<string, string> = {}): Promise<ConsoleWorld> {
  const dns = await startDnsServer();
  const receiver = await startWebhookReceiver();
  const server = await startTestApp({ DNS_SERVERS: dns.address, ...env });
  const browser = await launchBrowser();
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  const page = await context.newPage();
  return {
    dns,
    receiver,
    server,
    api: apiClient(server.baseUrl, server.apiKey),
    browser,
    context,
    page,
    async close() {
      await browser.close();
      await server.close();
      await receiver.close();
      await dns.close();
    },
  };
}
