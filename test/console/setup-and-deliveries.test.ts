import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { createVerifiedDomain } from '../helpers/domains.ts';
import { sendMail } from '../helpers/smtp.ts';
import { browserSkipReason, signIn } from './browser.ts';
import { type ConsoleWorld, startConsoleWorld } from './world.ts';

/** Checks `done` every 50 ms for up to 10 s. */
async function waitUntil(done: () => Promise<boolean>) {
  for (let tries = 0; tries < 200 && !(await done()); tries++) await new Promise((resolve) => setTimeout(resolve, 50));
}

interface Delivery {
  id: string;
  status: string;
}

describe('the console: setup focus and refusals, the delivery log and its details', { skip: browserSkipReason }, () => {
  let world: ConsoleWorld;
  let { dns, receiver, server, api, page } = {} as ConsoleWorld;
  let domainId: string;
  let endpointId: string;

  const deliveries = async (query = '') =>
    (await api.get(`/api/v2/deliveries?limit=100${query}`)).body.data as Delivery[];

  before(async () => {
    world = await startConsoleWorld({ DELIVERY_RETRY_SCALE: '0.001' });
    ({ dns, receiver, server, api, page } = world);
    domainId = (await createVerifiedDomain(api, dns, 'setup.test')).id;
    const endpoint = await api.post('/api/v2/endpoints', {
      name: 'Hook',
      type: 'webhook',
      config: { url: receiver.url },
    });
    assert.equal(endpoint.status, 201, JSON.stringify(endpoint.body));
    endpointId = endpoint.body.id;
    const address = await api.post('/api/v2/email-addresses', {
      address: 'hook@setup.test',
      domainId,
      endpointId,
    });
    assert.equal(address.status, 201, JSON.stringify(address.body));
    const toggled = await api.post('/api/v2/email-addresses', { address: 'toggle@setup.test', domainId });
    assert.equal(toggled.status, 201, JSON.stringify(toggled.body));
    await signIn(page, server.baseUrl, server.apiKey);
  });
  after(async () => {
    await world?.close();
  });

  test("an endpoint the API refuses: the notice gives the API's error with its details", async () => {
    await page.getByRole('link', { name: 'Setup' }).click();
    await page.getByLabel('Endpoint name').fill('Broken');
    await page.getByLabel('Webhook URL').fill('not a url');
    await page.getByRole('button', { name: 'Create endpoint' }).click();
    const notice = page.locator('#notice.error');
    await notice.waitFor();
    assert.equal(await notice.innerText(), 'Invalid configuration: Invalid webhook URL format');
  });

  test('endpoint actions sit in a wrapper inside their cell: the row keeps one height for every cell', async () => {
    const cells = page.locator('section[aria-labelledby=endpoints-title] tbody tr').first().locator('th, td');
    const shapes = await cells.evaluateAll((all) =>
      all.map((cell) => [getComputedStyle(cell).display, cell.getBoundingClientRect().height]),
    );
    assert.equal(shapes.length, 5);
    const height = shapes[0]![1];
    assert.deepEqual(
      shapes,
      shapes.map(() => ['table-cell', height]),
    );
  });

  test("keyboard actions on Setup: after the refresh the keyboard is on the same control (a toggle, an endpoint's Edit)", async () => {
    const row = page.getByRole('row', { name: /toggle@setup\.test/ });
    // Focus comes back once the rebuilt view is in place, a turn after its buttons appear: wait for it, then check.
    const focusedOn = async (label: string) => {
      await page
        .waitForFunction((text) => document.activeElement?.textContent === text, label, { timeout: 5000 })
        .catch(() => {});
      return page.evaluate(() => `${document.activeElement?.tagName} ${document.activeElement?.textContent}`);
    };
    await row.getByRole('button', { name: 'Deactivate' }).focus();
    await page.keyboard.press('Enter');
    await row.getByRole('button', { name: 'Activate' }).waitFor();
    assert.equal(await focusedOn('Activate'), 'BUTTON Activate');
    await page.keyboard.press('Enter');
    await row.getByRole('button', { name: 'Deactivate' }).waitFor();
    assert.equal(await focusedOn('Deactivate'), 'BUTTON Deactivate');
    // Saving an endpoint's edit closes its form: the keyboard goes back to that endpoint's Edit button.
    await page.getByRole('button', { name: 'Edit' }).click();
    await page.getByLabel('Description').last().fill('edited by keyboard');
    await page.keyboard.press('Enter');
    await page.getByRole('button', { name: 'Save endpoint' }).waitFor({ state: 'detached' });
    assert.equal(await focusedOn('Edit'), 'BUTTON Edit');
    assert.equal((await api.get(`/api/v2/endpoints/${endpointId}`)).body.description, 'edited by keyboard');
  });

  test('catch-all: a save the API refuses puts the form back to what is saved, the box unticked', async () => {
    const doomed = await api.post('/api/v2/endpoints', {
      name: 'Doomed',
      type: 'webhook',
      config: { url: receiver.url },
    });
    await page.goto(`${server.baseUrl}/#/setup/domains/${domainId}`);
    await page.getByRole('heading', { name: 'Catch-all' }).waitFor();
    const box = page.getByLabel('Accept mail for any address on this domain');
    await box.check();
    await page.getByLabel('Catch-all endpoint').selectOption({ label: 'Doomed' });
    assert.equal((await api.call('DELETE', `/api/v2/endpoints/${doomed.body.id}`)).status, 200);
    await page.getByRole('button', { name: 'Save catch-all' }).click();
    await page.locator('#notice.error').waitFor();
    assert.equal(await page.locator('#notice').innerText(), 'Endpoint not found or does not belong to user');
    assert.equal(await box.isChecked(), false);
    assert.equal(await page.getByLabel('Catch-all endpoint').inputValue(), '');
    assert.equal((await api.get(`/api/v2/domains/${domainId}`)).body.isCatchAllEnabled, false);
  });

  test('57 deliveries: the log pages 50 at a time, Retry only on the failed, each attempt with its response body', async () => {
    receiver.answer({ status: 500, body: 'broken' });
    const send = (subject: string) =>
      sendMail({ port: server.smtpPort, to: 'hook@setup.test', subject, text: subject });
    assert.equal((await send('Fails')).code, 250);
    await waitUntil(async () => (await deliveries('&status=failed')).length === 1);
    receiver.answer({ status: 200, body: 'thanks from the hook' });
    for (let index = 1; index <= 56; index++) assert.equal((await send(`Works ${index}`)).code, 250);
    await waitUntil(async () => (await deliveries('&status=success')).length === 56);

    await page.goto(`${server.baseUrl}/#/deliveries`);
    const pages = page.getByRole('navigation', { name: 'Pages' }).locator('span');
    await pages.waitFor();
    assert.equal(await pages.innerText(), '1–50 of 57');
    const rows = page.getByRole('table', { name: 'Deliveries' }).locator('tbody tr');
    assert.equal(await rows.count(), 50);
    await page.getByRole('button', { name: 'Next' }).click();
    await pages.filter({ hasText: '51–57 of 57' }).waitFor();
    assert.equal(await rows.count(), 7);
    assert.equal(await page.getByRole('button', { name: 'Next' }).isDisabled(), true);
    // The oldest delivery, the failed one, is last: only it offers Retry.
    assert.equal(await rows.getByRole('button', { name: 'Retry' }).count(), 1);
    assert.equal(await rows.last().getByRole('button', { name: 'Retry' }).count(), 1);

    const [failed] = await deliveries('&status=failed');
    await page.goto(`${server.baseUrl}/#/deliveries/${failed!.id}`);
    const attempts = page.getByRole('table', { name: 'Attempts' }).locator('tbody tr');
    await attempts.first().waitFor();
    const detail = (await api.get(`/api/v2/deliveries/${failed!.id}`)).body;
    assert.equal(await attempts.count(), detail.attemptLog.length);
    assert.deepEqual(
      await attempts.locator('td:nth-child(6) .reason').allInnerTexts(),
      detail.attemptLog.map(() => 'HTTP 500'),
    );
    assert.deepEqual(
      await attempts.locator('td:nth-child(6) pre.response-body').allInnerTexts(),
      detail.attemptLog.map(() => 'broken'),
    );
    assert.equal(await page.getByRole('button', { name: 'Retry' }).count(), 1);

    const [delivered] = await deliveries('&status=success');
    await page.goto(`${server.baseUrl}/#/deliveries/${delivered!.id}`);
    await page.locator('pre.response-body').waitFor();
    assert.deepEqual(await page.locator('pre.response-body').allInnerTexts(), ['thanks from the hook']);
    assert.equal(await page.getByRole('button', { name: 'Retry' }).count(), 0);
  });
});
