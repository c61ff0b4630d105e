import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { createVerifiedDomain } from '../helpers/domains.ts';
import { type SendMailOptions, sendMail } from '../helpers/smtp.ts';
import { browserSkipReason, signIn } from './browser.ts';
import { type ConsoleWorld, startConsoleWorld } from './world.ts';

/** A 6×4 PNG: its decoded size in the page proves the attachment's bytes reached the image. */
const PNG = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAAAYAAAAECAIAAAAiZtkUAAAAEUlEQVR4nGO4oKCAhhjIFQIA2fkZgXfMWS4AAAAASUVORK5CYII=',
  'base64',
);

describe('the console: inline images, Escape on a summary, a key revoked mid-session', {
  skip: browserSkipReason,
}, () => {
  let world: ConsoleWorld;
  let { dns, receiver, server, api, page } = {} as ConsoleWorld;

  async function send(options: Omit<SendMailOptions, 'port' | 'to'>) {
    const sent = await sendMail({ port: server.smtpPort, to: 'me@images.test', ...options });
    assert.equal(sent.code, 250, sent.response);
    return sent.queuedIds[0]!;
  }

  before(async () => {
    world = await startConsoleWorld();
    ({ dns, receiver, server, api, page } = world);
    const domain = await createVerifiedDomain(api, dns, 'images.test');
    const address = await api.post('/api/v2/email-addresses', { address: 'me@images.test', domainId: domain.id });
    assert.equal(address.status, 201, JSON.stringify(address.body));
    await signIn(page, server.baseUrl, server.apiKey);
  });
  after(async () => {
    await world?.close();
  });

  test('a cid: image shows its attachment (fetched with the key, given to the frame as a data: URL); remote images stay blocked', async () => {
    const id = await send({
      subject: 'Logo',
      html:
        '<p>Logo:</p><img alt="inline logo" src="cid:logo@images.test">' +
        `<img alt="remote pixel" src="http://127.0.0.1:${receiver.port}/pixel.png">`,
      attachments: [{ filename: 'logo.png', content: PNG, contentType: 'image/png', cid: 'logo@images.test' }],
    });
    await page.goto(`${server.baseUrl}/#/mail/${id}`);
    const frame = page.frameLocator('iframe.html-body');
    const logo = frame.getByAltText('inline logo');
    // Read once the image has loaded or failed.
    const shown = await logo.evaluate(async (image: HTMLImageElement) => {
      if (!image.complete) {
        await new Promise((resolve) => {
          image.addEventListener('load', resolve, { once: true });
          image.addEventListener('error', resolve, { once: true });
        });
      }
      return { scheme: new URL(image.src).protocol, width: image.naturalWidth, height: image.naturalHeight };
    });
    assert.deepEqual(shown, { scheme: 'data:', width: 6, height: 4 });
    // Remote content is still the reader's choice, and the frame still runs no script.
    assert.equal(await page.locator('.remote-note').textContent(), 'Remote content is blocked. Load remote content');
    assert.equal(await frame.getByAltText('remote pixel').evaluate((image: HTMLImageElement) => image.naturalWidth), 0);
    assert.equal(
      receiver.requests.some((one) => one.path === '/pixel.png'),
      false,
    );
    assert.equal(
      await page.locator('iframe.html-body').getAttribute('sandbox'),
      'allow-popups allow-popups-to-escape-sandbox',
    );
    assert.equal(await logo.getAttribute('src'), `data:image/png;base64,${PNG.toString('base64')}`);
  });

  test('Escape on a focused summary closes its part and stays on the message; elsewhere it goes back to the inbox', async () => {
    const id = await send({ subject: 'Plain', text: 'Just text' });
    await page.goto(`${server.baseUrl}/#/mail/${id}`);
    const headers = page.locator('summary', { hasText: 'Headers' });
    await headers.focus();
    await page.keyboard.press('Enter');
    const details = page.locator('details', { has: headers });
    assert.equal(await details.getAttribute('open'), '');
    await page.keyboard.press('Escape');
    assert.equal(await details.getAttribute('open'), null);
    // Once more on the closed summary: still nothing to leave for.
    await page.keyboard.press('Escape');
    await page.locator('summary', { hasText: 'Raw source' }).focus();
    await page.keyboard.press('Escape');
    assert.equal(page.url(), `${server.baseUrl}/#/mail/${id}`);
    assert.deepEqual(await page.locator('main h1').allInnerTexts(), ['Plain']);
    await page.locator('main h1').focus();
    await page.keyboard.press('Escape');
    await page.getByRole('heading', { name: 'Inbox' }).waitFor();
    assert.equal(page.url(), `${server.baseUrl}/#/inbox`);
  });

  test('a key revoked while its stream is open: the console signs out and says the key is no longer valid', async () => {
    const issued = await api.post('/api/v2/keys', {});
    assert.equal(issued.status, 201, JSON.stringify(issued.body));
    const context = await world.browser.newContext({ viewport: { width: 1280, height: 900 } });
    const other = await context.newPage();
    await signIn(other, server.baseUrl, issued.body.key);
    await other.locator('#live-state[data-state="live"]').waitFor();
    assert.equal((await api.call('DELETE', `/api/v2/keys/${issued.body.id}`)).status, 200);
    // The next event ends the revoked key's stream; its reconnect is then refused.
    await send({ subject: 'After the revocation', text: 'x' });
    const refusal = other.getByRole('alert');
    await refusal.filter({ hasText: 'no longer valid' }).waitFor();
    assert.equal(
      await refusal.innerText(),
      'This API key is no longer valid (Unknown or revoked API key). Sign in with another key.',
    );
    assert.equal(await other.locator('#topbar').isHidden(), true);
    assert.equal(await other.evaluate(() => sessionStorage.getItem('mailroom.apiKey')), null);
    await context.close();
  });
});
