import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { createVerifiedDomain } from '../helpers/domains.ts';
import { browserSkipReason, signIn } from './browser.ts';
import { type ConsoleWorld, startConsoleWorld } from './world.ts';

describe('the console: deleting endpoints, addresses and domains', { skip: browserSkipReason }, () => {
  let world: ConsoleWorld;
  let { dns, receiver, server, api, page } = {} as ConsoleWorld;
  let rootId: string;
  let subId: string;

  const section = (title: string) => page.locator(`section[aria-labelledby=${title}-title]`);
  const rowNames = (title: string) => section(title).locator('tbody th').allInnerTexts();
  /** The focused control's key, once it is `expected` or 5 s have passed: focus moves a turn after the redraw. */
  const focused = async (expected: string) => {
    const key = () => (document.activeElement as HTMLElement).dataset.focus ?? document.activeElement?.id;
    await page
      .waitForFunction(`(${key})() === ${JSON.stringify(expected)}`, undefined, { timeout: 5000 })
      .catch(() => {});
    return page.evaluate(key);
  };

  /** Answers the next confirm() and keeps its question. */
  function answerConfirm(accept: boolean) {
    return new Promise<string>((resolve) => {
      page.once('dialog', async (dialog) => {
        resolve(dialog.message());
        if (accept) await dialog.accept();
        else await dialog.dismiss();
      });
    });
  }

  before(async () => {
    world = await startConsoleWorld();
    ({ dns, receiver, server, api, page } = world);
    rootId = (await createVerifiedDomain(api, dns, 'root.test')).id;
    const sub = await api.post('/api/v2/domains', { domain: 'sub.root.test' });
    assert.equal(sub.status, 201, JSON.stringify(sub.body));
    subId = sub.body.id;
    for (const name of ['Alpha', 'Beta']) {
      const endpoint = await api.post('/api/v2/endpoints', { name, type: 'webhook', config: { url: receiver.url } });
      assert.equal(endpoint.status, 201, JSON.stringify(endpoint.body));
    }
    for (const address of ['a@root.test', 'b@root.test']) {
      const created = await api.post('/api/v2/email-addresses', { address, domainId: rootId });
      assert.equal(created.status, 201, JSON.stringify(created.body));
    }
    await signIn(page, server.baseUrl, server.apiKey);
  });
  after(async () => {
    await world?.close();
  });

  test('an endpoint: No keeps it; Yes deletes it and the keyboard moves to the next Delete, then to the heading', async () => {
    await page.goto(`${server.baseUrl}/#/setup`);
    await section('endpoints').locator('tbody tr').first().waitFor();
    const [first, second] = await rowNames('endpoints');
    const firstRow = section('endpoints').locator('tbody tr', { hasText: first!.split('\n')[0]! });
    await firstRow.getByRole('button', { name: 'Delete' }).focus();

    let question = answerConfirm(false);
    await page.keyboard.press('Enter');
    assert.match(await question, /^Delete the endpoint (Alpha|Beta)\? Addresses routed to it will only store/);
    assert.equal((await api.get('/api/v2/endpoints')).body.data.length, 2);

    question = answerConfirm(true);
    await page.keyboard.press('Enter');
    await question;
    await firstRow.waitFor({ state: 'detached' });
    assert.equal(await page.locator('#notice').innerText(), `Deleted ${first!.split('\n')[0]}`);
    assert.deepEqual(await rowNames('endpoints'), [second]);
    const remaining = (await api.get('/api/v2/endpoints')).body.data;
    assert.deepEqual(
      remaining.map((one: { name: string }) => one.name),
      [second!.split('\n')[0]],
    );
    assert.equal(await focused(`endpoint-delete:${remaining[0].id}`), `endpoint-delete:${remaining[0].id}`);

    question = answerConfirm(true);
    await page.keyboard.press('Enter');
    await question;
    await section('endpoints').getByText('No endpoints yet.').waitFor();
    assert.equal(await focused('endpoints-title'), 'endpoints-title');
  });

  test('an address: deleted after Yes, the keyboard on the Delete of the row that took its place', async () => {
    const [first, second] = await rowNames('addresses');
    assert.deepEqual([first, second].sort(), ['a@root.test', 'b@root.test']);
    await section('addresses').getByRole('row', { name: first }).getByRole('button', { name: 'Delete' }).focus();
    const question = answerConfirm(true);
    await page.keyboard.press('Enter');
    assert.equal(await question, `Delete the address ${first}?`);
    await section('addresses').getByRole('row', { name: first }).waitFor({ state: 'detached' });
    assert.equal(await page.locator('#notice').innerText(), `Deleted ${first}`);
    assert.deepEqual(await rowNames('addresses'), [second]);
    const left = (await api.get('/api/v2/email-addresses')).body.data;
    assert.deepEqual(
      left.map((one: { address: string }) => one.address),
      [second],
    );
    assert.equal(await focused(`address-delete:${left[0].id}`), `address-delete:${left[0].id}`);
  });

  test("a domain the API refuses to delete (it has a subdomain) stays, with the API's reason", async () => {
    const row = section('domains').getByRole('row', { name: /^root\.test/ });
    const remove = row.getByRole('button', { name: 'Delete' });
    await remove.focus();
    const question = answerConfirm(true);
    await page.keyboard.press('Enter');
    assert.equal(await question, 'Delete the domain root.test? Its addresses and DNS records are deleted with it.');
    await page.locator('#notice.error').waitFor();
    assert.equal(
      await page.locator('#notice').innerText(),
      'Cannot delete root domain. This domain has 1 subdomain(s) that depend on it: sub.root.test',
    );
    assert.deepEqual(await rowNames('domains'), ['sub.root.test', 'root.test']);
    assert.equal(await focused(`domain-delete:${rootId}`), `domain-delete:${rootId}`);
    assert.equal((await api.get(`/api/v2/domains/${rootId}`)).status, 200);
  });

  test("a domain's own page: Delete domain goes back to Setup without it; then its parent deletes with its address", async () => {
    await page.goto(`${server.baseUrl}/#/setup/domains/${subId}`);
    await page.getByRole('heading', { name: 'sub.root.test' }).waitFor();
    let question = answerConfirm(true);
    await page.getByRole('button', { name: 'Delete domain' }).click();
    assert.equal(await question, 'Delete the domain sub.root.test? Its addresses and DNS records are deleted with it.');
    await page.getByRole('heading', { name: 'Setup', exact: true }).waitFor();
    assert.equal(page.url(), `${server.baseUrl}/#/setup`);
    assert.equal(await page.locator('#notice').innerText(), 'Deleted sub.root.test');
    assert.deepEqual(await rowNames('domains'), ['root.test']);
    assert.equal((await api.get(`/api/v2/domains/${subId}`)).status, 404);

    question = answerConfirm(true);
    await section('domains').getByRole('button', { name: 'Delete' }).click();
    await question;
    await section('domains').getByText('No domains yet.').waitFor();
    assert.equal(await page.locator('#notice').innerText(), 'Deleted root.test');
    assert.equal(await focused('domains-title'), 'domains-title');
    assert.deepEqual((await api.get('/api/v2/email-addresses')).body.data, []);
    assert.equal(await section('addresses').getByText('No addresses yet.').isVisible(), true);
  });
});
