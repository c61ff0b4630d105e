import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { createVerifiedDomain } from '../helpers/domains.ts';
import { sendMail } from '../helpers/smtp.ts';
import { browserSkipReason, signIn } from './browser.ts';
import { type ConsoleWorld, startConsoleWorld } from './world.ts';

/** One more than the API's largest page: each list needs a second request. */
const COUNT = 101;

describe('the console: a setup longer than one page of the API, and a stream that drops', {
  skip: browserSkipReason,
}, () => {
  let world: ConsoleWorld;
  let { dns, server, api, page } = {} as ConsoleWorld;

  before(async () => {
    world = await startConsoleWorld();
    ({ dns, server, api, page } = world);
    const domain = await createVerifiedDomain(api, dns, 'many.test');
    const endpointIds: string[] = [];
    for (let index = 0; index < COUNT; index++) {
      const name = `e${String(index).padStart(3, '0')}`;
      const created = await api.post('/api/v2/endpoints', { name, type: 'email', config: { forwardTo: 'x@x.test' } });
      assert.equal(created.status, 201, JSON.stringify(created.body));
      endpointIds.push(created.body.id);
    }
    for (let index = 0; index < COUNT; index++) {
      const address = `a${String(index).padStart(3, '0')}@many.test`;
      // The oldest address goes to the oldest endpoint: both are on the second page of their lists.
      const endpointId = index === 0 ? endpointIds[0] : undefined;
      const created = await api.post('/api/v2/email-addresses', { address, domainId: domain.id, endpointId });
      assert.equal(created.status, 201, JSON.stringify(created.body));
    }
    await signIn(page, server.baseUrl, server.apiKey);
  });
  after(async () => {
    await world?.close();
  });

  test(`Setup lists all ${COUNT} endpoints and addresses, and the oldest address's routing to the oldest endpoint`, async () => {
    await page.goto(`${server.baseUrl}/#/setup`);
    const section = (title: string) => page.locator(`section[aria-labelledby=${title}-title]`);
    const addresses = section('addresses').locator('tbody th');
    await addresses.first().waitFor();
    const names = await addresses.allInnerTexts();
    assert.equal(names.length, COUNT);
    assert.equal(new Set(names).size, COUNT);
    assert.equal(names.at(-1), 'a000@many.test');
    assert.equal(await section('endpoints').locator('tbody tr').count(), COUNT);
    // Shown as "No routing", a Save would have unrouted it.
    const routing = page.getByLabel('Endpoint for a000@many.test');
    assert.equal(await routing.locator('option:checked').innerText(), 'e000');
  });

  test('a stream that drops before its first event: mail that arrived meanwhile shows once it is back', async () => {
    // A page of its own, signed in once its stream is under the test's control.
    const context = await world.browser.newContext({ viewport: { width: 1280, height: 900 } });
    const page = await context.newPage();
    let opened = 0;
    let release = () => {};
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    // The first stream ends at once; the reconnect is held until a mail has arrived, so only a reload can show it.
    await page.route('**/api/v2/events', async (route) => {
      opened++;
      if (opened === 1)
        return route.fulfill({ status: 200, contentType: 'text/event-stream', body: 'retry: 1000\n\n' });
      if (opened === 2) await held;
      return route.continue();
    });
    await signIn(page, server.baseUrl, server.apiKey);
    await page.waitForFunction(() => document.getElementById('live-state')?.dataset.state === 'reconnecting');
    const sent = await sendMail({ port: server.smtpPort, to: 'a001@many.test', subject: 'During the drop', text: 'x' });
    assert.equal(sent.code, 250, sent.response);
    release();
    await page.getByRole('link', { name: /During the drop/ }).waitFor({ timeout: 10_000 });
    assert.equal(await page.locator('#live-state').innerText(), 'Live');
    assert.equal(opened, 2);
    await context.close();
  });
});
