import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { after, before, describe, test } from 'node:test';
import { publishRequiredRecords } from '../helpers/domains.ts';
import { sendMail } from '../helpers/smtp.ts';
import { browserSkipReason, screenshot, signIn } from './browser.ts';
import { type ConsoleWorld, startConsoleWorld } from './world.ts';

/** Checks `done` every 50 ms for up to 5 s. */
async function waitUntil(done: () => boolean) {
  for (let tries = 0; tries < 100 && !done(); tries++) await new Promise((resolve) => setTimeout(resolve, 50));
}

/** The whole round a developer makes, in one browser page, in order: each step builds on the one before. */
describe('the console end to end: setup, live inbox, message, deliveries, search', { skip: browserSkipReason }, () => {
  let world: ConsoleWorld;
  let { dns, receiver, server, api, page } = {} as ConsoleWorld;
  let domainId: string;
  let emailId: string;
  const attachment = randomBytes(3000);

  before(async () => {
    world = await startConsoleWorld({ DELIVERY_RETRY_SCALE: '0.001' });
    ({ dns, receiver, server, api, page } = world);
  });
  after(async () => {
    await world?.close();
  });

  test('sign in with the API key', async () => {
    await signIn(page, server.baseUrl, server.apiKey);
    assert.equal(await page.evaluate(() => sessionStorage.getItem('mailroom.apiKey')), server.apiKey);
  });

  test('add a domain: its four records show with their names and values, each unverified with the reason', async () => {
    await page.getByRole('link', { name: 'Setup' }).click();
    await page.getByLabel('Domain name').fill('console.test');
    await page.getByRole('button', { name: 'Add domain' }).click();
    await page.getByRole('heading', { name: 'console.test' }).waitFor();
    domainId = decodeURIComponent(page.url().split('/setup/domains/')[1]!);
    const records = (await api.get(`/api/v2/domains/${domainId}/dns-records`)).body.records;
    const rows = page.getByRole('table', { name: 'DNS records' }).locator('tbody tr');
    assert.equal(await rows.count(), 4);
    for (const [index, record] of records.entries()) {
      const cells = await rows.nth(index).locator('td').allInnerTexts();
      assert.equal(cells[0], record.recordType);
      assert.equal(cells[1]!.replace(/\s*Copy$/, ''), record.name);
      assert.equal(cells[2]!.replace(/\s*Copy$/, ''), record.value);
    }
    await page.getByRole('button', { name: 'Check now' }).click();
    const firstStatus = page.locator('.records tbody tr').first().locator('.record-status');
    await firstStatus.filter({ hasText: 'No TXT records found' }).waitFor();
  });

  test('verify it against the DNS server: "Check now" turns the domain and its required records verified', async () => {
    const created = await api.get(`/api/v2/domains/${domainId}/dns-records`);
    publishRequiredRecords(
      dns,
      created.body.records.map((record: { recordType: string; name: string; value: string; isRequired: boolean }) => ({
        ...record,
        type: record.recordType,
      })),
    );
    await page.getByRole('button', { name: 'Check now' }).click();
    await page.locator('.domain-status .badge', { hasText: 'verified' }).waitFor();
    const statuses = await page.locator('.records tbody tr .record-status .badge').allInnerTexts();
    assert.deepEqual(statuses.slice(0, 2), ['verified', 'verified']);
    assert.equal((await api.get(`/api/v2/domains/${domainId}`)).body.status, 'verified');
    await screenshot(page, 'domain-records');
  });

  test('create an endpoint and an address routed to it', async () => {
    await page.getByRole('link', { name: 'Back to setup' }).click();
    await page.getByLabel('Endpoint name').fill('Console hook');
    await page.getByLabel('Type').selectOption('webhook');
    await page.getByLabel('Webhook URL').fill(receiver.url);
    await page.getByRole('button', { name: 'Create endpoint' }).click();
    await page.getByRole('rowheader', { name: /Console hook/ }).waitFor();
    const endpoints = (await api.get('/api/v2/endpoints')).body.data;
    assert.deepEqual(
      endpoints.map((one: { name: string; config: { url: string } }) => [one.name, one.config.url]),
      [['Console hook', receiver.url]],
    );
    await page.getByLabel('Address', { exact: true }).fill('hello@console.test');
    await page.getByLabel('Domain', { exact: true }).selectOption({ label: 'console.test' });
    await page.getByLabel('Endpoint', { exact: true }).selectOption({ label: 'Console hook' });
    await page.getByRole('button', { name: 'Create address' }).click();
    await page.getByRole('rowheader', { name: 'hello@console.test' }).waitFor();
    const addresses = (await api.get('/api/v2/email-addresses')).body.data;
    assert.deepEqual(
      addresses.map((one: { address: string; endpointId: string; isActive: boolean }) => [
        one.address,
        one.endpointId,
        one.isActive,
      ]),
      [['hello@console.test', endpoints[0].id, true]],
    );
  });

  test('mail sent over SMTP appears in the open inbox within a second, without a reload', async () => {
    await page.getByRole('link', { name: 'Inbox' }).click();
    // An empty mailbox says where mail comes from, with a way to Setup.
    const empty = page.locator('.mail-list .empty');
    await empty.waitFor();
    assert.match(await empty.innerText(), /^No mail yet\. Mail sent to an active address shows here/);
    const toSetup = empty.getByRole('link', { name: 'set up a domain and an address' });
    assert.equal(await toSetup.getAttribute('href'), '#/setup');
    const events = await fetch(`${server.baseUrl}/api/v2/events`, {
      headers: { authorization: `Bearer ${server.apiKey}` },
    });
    await events.body?.cancel();
    // With the event stream on the server the console must be reading it; without one it refreshes every second.
    await page.locator(`#live-state[data-state="${events.status === 404 ? 'polling' : 'live'}"]`).waitFor();
    await page.evaluate(() => {
      (window as unknown as { stillThisPage: boolean }).stillThisPage = true;
    });
    // The endpoint fails for now, so the delivery test below has a failed delivery to retry.
    receiver.answer({ status: 500, body: 'broken' });
    const sent = await sendMail({
      port: server.smtpPort,
      from: 'ann@sender.test',
      to: 'hello@console.test',
      subject: 'Quarterly report',
      text: 'The report is attached.',
      html:
        '<p id="greeting">Hello from <b>Ann</b></p><img alt="pixel" src="http://127.0.0.1:' +
        receiver.port +
        '/pixel.png">',
      attachments: [{ filename: 'report.bin', content: attachment, contentType: 'application/octet-stream' }],
    });
    assert.equal(sent.code, 250, sent.response);
    emailId = sent.queuedIds[0]!;
    await page.getByRole('link', { name: /Quarterly report/ }).waitFor({ timeout: 1000 });
    assert.equal(await page.evaluate(() => (window as unknown as { stillThisPage?: boolean }).stillThisPage), true);
    await screenshot(page, 'inbox');
  });

  test('open it: the HTML body in a sandboxed iframe, remote images blocked until asked, verdict badges', async () => {
    await page.getByRole('link', { name: /Quarterly report/ }).click();
    await page.getByRole('heading', { name: 'Quarterly report' }).waitFor();
    const frame = page.locator('iframe.html-body');
    assert.equal(await frame.getAttribute('sandbox'), 'allow-popups allow-popups-to-escape-sandbox');
    assert.equal(await page.frameLocator('iframe.html-body').locator('p').first().innerText(), 'Hello from Ann');
    const security = (await api.get(`/api/v2/mail/${emailId}`)).body.security;
    const badges = await page.getByLabel('Verdicts').locator('.badge').allInnerTexts();
    assert.deepEqual(badges, [
      `SPF ${security.spf}`,
      `DKIM ${security.dkim}`,
      `DMARC ${security.dmarc}`,
      `Spam ${security.spam}`,
    ]);
    await screenshot(page, 'message');
    const pixels = () => receiver.requests.filter((one) => one.path === '/pixel.png').length;
    assert.equal(pixels(), 0, 'the frame has rendered, and fetched nothing remote');
    await page.getByRole('button', { name: 'Load remote content' }).click();
    await waitUntil(() => pixels() === 1);
    assert.equal(pixels(), 1);
  });

  test('its attachment downloads byte for byte as sent', async () => {
    const [download] = await Promise.all([
      page.waitForEvent('download'),
      page.getByRole('button', { name: 'Download report.bin' }).click(),
    ]);
    assert.equal(download.suggestedFilename(), 'report.bin');
    assert.deepEqual(await readFile((await download.path())!), attachment);
  });

  test('its delivery shows every attempt with its response, and "Retry" delivers it once the endpoint is back', async () => {
    await page.getByRole('link', { name: 'Deliveries' }).nth(1).click();
    const row = page.getByRole('table', { name: 'Deliveries' }).locator('tbody tr');
    await row.filter({ hasText: 'failed' }).waitFor();
    assert.equal(await row.count(), 1);
    const failed = (await api.get(`/api/v2/deliveries?emailId=${emailId}`)).body.data[0];
    assert.equal(failed.status, 'failed');
    assert.match(await row.locator('.response').innerText(), /^HTTP 500 · \d+ ms$/);
    await screenshot(page, 'delivery-log');
    receiver.answer({ status: 200, body: 'ok' });
    await row.getByRole('button', { name: 'Retry' }).click();
    await page.locator('#notice', { hasText: 'Delivery queued for retry' }).waitFor();
    await row.filter({ hasText: 'success' }).waitFor();
    assert.match(await row.locator('.response').innerText(), /^HTTP 200 · \d+ ms$/);
    await row.getByRole('link').first().click();
    const attempts = page.getByRole('table', { name: 'Attempts' }).locator('tbody tr');
    await attempts.first().waitFor();
    const delivered = (await api.get(`/api/v2/deliveries/${failed.id}`)).body;
    assert.equal(await attempts.count(), delivered.attemptLog.length);
    assert.equal(await attempts.count(), failed.attempts + 1);
    const codes = await attempts.locator('td:nth-child(5)').allInnerTexts();
    assert.deepEqual(codes, [...Array(failed.attempts).fill('500'), '200']);
  });

  test('search by an operator: subject: and from: narrow the list to what the API finds', async () => {
    const sent = await sendMail({
      port: server.smtpPort,
      from: 'bob@other.test',
      to: 'hello@console.test',
      subject: 'Invoice 42',
      text: 'Please pay.',
    });
    assert.equal(sent.code, 250, sent.response);
    await page.getByRole('link', { name: 'Inbox' }).click();
    await page.getByRole('link', { name: /Invoice 42/ }).waitFor();
    const subjects = () => page.locator('.mail-row .mail-subject').allInnerTexts();
    /** The subjects, once they are `expected` or 5 s have passed: the URL changes a turn before the list is rebuilt. */
    const subjectsOnceThey = async (expected: string[]) => {
      await page
        .waitForFunction(
          (want) =>
            JSON.stringify([...document.querySelectorAll('.mail-row .mail-subject')].map((one) => one.textContent)) ===
            want,
          JSON.stringify(expected),
          { timeout: 5000 },
        )
        .catch(() => {});
      return subjects();
    };
    assert.deepEqual(await subjects(), ['Invoice 42', 'Quarterly report']);
    await page.getByLabel('Search').fill('subject:invoice');
    await page.getByRole('button', { name: 'Search' }).click();
    await page.waitForURL(/search=subject%3Ainvoice/);
    assert.deepEqual(await subjectsOnceThey(['Invoice 42']), ['Invoice 42']);
    await page.getByLabel('Search').fill('from:ann@sender.test');
    await page.getByRole('button', { name: 'Search' }).click();
    await page.waitForURL(/search=from%3Aann/);
    assert.deepEqual(await subjectsOnceThey(['Quarterly report']), ['Quarterly report']);
  });
});
