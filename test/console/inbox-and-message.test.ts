import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Page } from 'playwright-core';
import { createVerifiedDomain } from '../helpers/domains.ts';
import { sendMail } from '../helpers/smtp.ts';
import { browserSkipReason, signIn } from './browser.ts';
import { type ConsoleWorld, startConsoleWorld } from './world.ts';

/** Resolves once `release` is called: holds a request in `page.route` for as long as a test needs. */
function gate() {
  let release = () => {};
  const opened = new Promise<void>((resolve) => {
    release = resolve;
  });
  return { opened, release };
}

/** Two turns of the page's event loop, so work queued behind an answer that has arrived has run. */
function settle(page: Page) {
  return page.evaluate(() => new Promise((resolve) => setTimeout(() => setTimeout(resolve))));
}

describe('the console: inbox navigation, refusals, paging, focus and message links', {
  skip: browserSkipReason,
}, () => {
  let world: ConsoleWorld;
  let { dns, receiver, server, context, page } = {} as ConsoleWorld;
  const ids: Record<string, string> = {};

  async function send(subject: string, html?: string) {
    const sent = await sendMail({ port: server.smtpPort, to: 'me@inbox.test', subject, text: subject, html });
    assert.equal(sent.code, 250, sent.response);
    ids[subject] = sent.queuedIds[0]!;
  }

  before(async () => {
    world = await startConsoleWorld();
    ({ dns, receiver, server, context, page } = world);
    const { api } = world;
    const domain = await createVerifiedDomain(api, dns, 'inbox.test');
    const address = await api.post('/api/v2/email-addresses', { address: 'me@inbox.test', domainId: domain.id });
    assert.equal(address.status, 201, JSON.stringify(address.body));
    await send('First');
    await send('Second');
    await send(
      'Links',
      `<p><a href="http://127.0.0.1:${receiver.port}/landing">plain link</a></p>` +
        `<p><a target="_self" href="http://127.0.0.1:${receiver.port}/self">self link</a></p>` +
        `<p><a href="${server.baseUrl}/#/setup">console link</a></p>` +
        '<p><a href="/#/setup">relative link</a></p>',
    );
    await signIn(page, server.baseUrl, server.apiKey);
  });
  after(async () => {
    await world?.close();
  });

  test('a message that loads after the reader moved on to Setup never replaces Setup: the last navigation wins', async () => {
    const held = gate();
    const messagePath = `/api/v2/mail/${ids.First}`;
    await page.route(`**${messagePath}`, async (route) => {
      await held.opened;
      await route.continue();
    });
    await page.getByRole('link', { name: /First/ }).click();
    await page.getByRole('link', { name: 'Setup' }).click();
    await page.getByRole('heading', { name: 'Setup', exact: true }).waitFor();
    const answered = page.waitForResponse((response) => response.url().endsWith(messagePath));
    held.release();
    await (await answered).finished();
    await page.waitForFunction(
      (path) => performance.getEntriesByType('resource').some((one) => one.name.endsWith(path)),
      messagePath,
    );
    await settle(page);
    assert.deepEqual(await page.locator('main h1').allInnerTexts(), ['Setup']);
    assert.equal(page.url(), `${server.baseUrl}/#/setup`);
    // The dropped message view left no Escape handler behind: Escape on Setup stays on Setup.
    await page.keyboard.press('Escape');
    await settle(page);
    assert.equal(page.url(), `${server.baseUrl}/#/setup`);
    await page.unroute(`**${messagePath}`);
  });

  test("a search the API refuses keeps the filter form, as typed, with the API's refusal beside it", async () => {
    await page.goto(`${server.baseUrl}/#/inbox`);
    await page.getByRole('link', { name: /First/ }).waitFor();
    await page.getByLabel('Search').fill('before:notadate');
    await page.getByRole('button', { name: 'Search' }).click();
    const refusal = page.getByRole('alert');
    await refusal.waitFor();
    assert.equal(await refusal.innerText(), 'Invalid date in search: before:notadate (use YYYY-MM-DD)');
    assert.equal(await page.getByLabel('Search').inputValue(), 'before:notadate');
    assert.deepEqual(await page.getByLabel('Domain').locator('option').allInnerTexts(), ['All domains', 'inbox.test']);
    // The form still works: a corrected search shows the list again.
    await page.getByLabel('Search').fill('subject:second');
    await page.getByRole('button', { name: 'Search' }).click();
    await page.getByRole('link', { name: /Second/ }).waitFor();
    assert.deepEqual(await page.locator('.mail-row .mail-subject').allInnerTexts(), ['Second']);
  });

  test('a negative offset in the address is refused beside the form too', async () => {
    await page.goto(`${server.baseUrl}/#/inbox?offset=-10`);
    const refusal = page.getByRole('alert');
    await refusal.waitFor();
    assert.equal(await refusal.innerText(), 'Offset must be non-negative');
    assert.equal(await page.getByRole('search').isVisible(), true);
  });

  test('an offset past the last message says so, and Previous goes back to the last page', async () => {
    await page.goto(`${server.baseUrl}/#/inbox?offset=5000`);
    const status = page.getByRole('navigation', { name: 'Pages' }).locator('span');
    await status.waitFor();
    assert.equal(await status.innerText(), 'Past the last page: 3 in all');
    await page.getByRole('button', { name: 'Previous' }).click();
    await page.waitForURL(/offset=0$/);
    await status.filter({ hasText: 'of 3' }).waitFor();
    assert.equal(await status.innerText(), '1–3 of 3');
    assert.equal(await page.locator('.mail-row').count(), 3);
  });

  test('a live refresh keeps the keyboard on the same message row, found by its email id', async () => {
    await page.goto(`${server.baseUrl}/#/inbox`);
    await page.getByRole('link', { name: /Second/ }).focus();
    await send('Third');
    await page.getByRole('link', { name: /Third/ }).waitFor();
    const focused = await page.evaluate(() => (document.activeElement as HTMLElement).dataset.emailId);
    assert.equal(focused, ids.Second);
    assert.deepEqual(await page.locator('.mail-row .mail-subject').allInnerTexts(), [
      'Third',
      'Links',
      'Second',
      'First',
    ]);
  });

  test('links in the HTML body open a new tab with no opener and no referrer, relative ones nothing; no script runs', async () => {
    await page.goto(`${server.baseUrl}/#/mail/${ids.Links}`);
    const frameElement = page.locator('iframe.html-body');
    await frameElement.waitFor();
    assert.equal(await frameElement.getAttribute('sandbox'), 'allow-popups allow-popups-to-escape-sandbox');
    const frame = page.frameLocator('iframe.html-body');
    for (const [name, path] of [
      ['plain link', '/landing'],
      ['self link', '/self'],
    ] as const) {
      const [tab] = await Promise.all([context.waitForEvent('page'), frame.getByText(name).click()]);
      await tab.waitForLoadState();
      assert.equal(tab.url(), `http://127.0.0.1:${receiver.port}${path}`);
      assert.equal(await tab.evaluate(() => window.opener), null);
      assert.equal(receiver.requests.find((one) => one.path === path)?.headers.referer, undefined);
      await tab.close();
    }
    // A link back to the console opens it signed out: the new tab cannot reach this tab's key.
    const [tab] = await Promise.all([context.waitForEvent('page'), frame.getByText('console link').click()]);
    await tab.getByLabel('API key').waitFor();
    assert.equal(await tab.evaluate(() => sessionStorage.getItem('mailroom.apiKey')), null);
    await tab.close();
    // A relative link has nothing in a message to be relative to: it is no link, where it opened the console.
    assert.equal(await frame.getByText('relative link').getAttribute('href'), null);
    // The message stayed in its frame, whose origin is opaque: nothing in it can read the console's storage.
    assert.equal(await frame.getByText('plain link').isVisible(), true);
    const content = page.frames().find((one) => one.url() === 'about:srcdoc');
    assert.equal(await content?.evaluate(() => window.origin), 'null');
    assert.deepEqual(await page.locator('main h1').allInnerTexts(), ['Links']);
  });

  test('375px phone: the filter checkboxes keep their own size instead of the full width', async () => {
    const phone = await world.browser.newContext({ viewport: { width: 375, height: 812 } });
    const small = await phone.newPage();
    await signIn(small, server.baseUrl, server.apiKey);
    for (const label of ['Include archived', 'Failed to parse only']) {
      const box = await small.getByLabel(label).boundingBox();
      assert.ok(box && box.width < 30, `${label} is ${box?.width}px wide`);
    }
    await phone.close();
  });
});
