import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { createVerifiedDomain } from '../helpers/domains.ts';
import { type SendMailOptions, sendMail } from '../helpers/smtp.ts';
import { browserSkipReason, signIn } from './browser.ts';
import { type ConsoleWorld, startConsoleWorld } from './world.ts';

describe('the console: what a sender controls in a message', { skip: browserSkipReason }, () => {
  let world: ConsoleWorld;
  let { dns, server, api, page } = {} as ConsoleWorld;

  async function send(options: Omit<SendMailOptions, 'port' | 'to'>) {
    const sent = await sendMail({ port: server.smtpPort, to: 'me@hostile.test', ...options });
    assert.equal(sent.code, 250, sent.response);
    return sent.queuedIds[0]!;
  }

  /** Opens a message and waits for its view. */
  async function open(id: string) {
    await page.goto(`${server.baseUrl}/#/mail/${id}`);
    await page.locator('main .toolbar').waitFor();
  }

  before(async () => {
    world = await startConsoleWorld();
    ({ dns, server, api, page } = world);
    const domain = await createVerifiedDomain(api, dns, 'hostile.test');
    const address = await api.post('/api/v2/email-addresses', { address: 'me@hostile.test', domainId: domain.id });
    assert.equal(address.status, 201, JSON.stringify(address.body));
    await signIn(page, server.baseUrl, server.apiKey);
  });
  after(async () => {
    await world?.close();
  });

  test('an HTML body whose only URLs are links offers no "Load remote content": nothing in it is blocked', async () => {
    const id = await send({
      subject: 'Links only',
      html: '<p><a href="https://example.com/a">one</a> and <a href="//example.com/b">two</a></p>',
    });
    await open(id);
    await page.frameLocator('iframe.html-body').getByText('one').waitFor();
    assert.equal(await page.locator('.remote-note').count(), 0);
  });

  test('a newsletter shows with its style sheet, its cid: images resolved; its scripts, handlers and meta refresh do nothing', async () => {
    const pixel = Buffer.from(
      'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==',
      'base64',
    );
    const id = await send({
      subject: 'Autumn sale',
      html:
        '<html><head><meta http-equiv="refresh" content="0;url=http://127.0.0.1:9/elsewhere">' +
        '<style>.headline { color: rgb(200, 0, 0); } .banner { background-image: url(cid:banner@news); }</style>' +
        '</head><body><h1 class="headline">Autumn sale</h1><div class="banner">Banner</div>' +
        '<img alt="broken" src="missing.png" onerror="document.body.setAttribute(\'data-ran\', \'handler\')">' +
        "<script>document.body.setAttribute('data-ran', 'script')</script></body></html>",
      attachments: [{ filename: 'banner.png', content: pixel, contentType: 'image/png', cid: 'banner@news' }],
    });
    await open(id);
    const frame = page.frameLocator('iframe.html-body');
    await frame.getByText('Autumn sale').waitFor();
    const content = page.frames().find((one) => one.url() === 'about:srcdoc')!;
    await content.waitForLoadState('load');
    assert.deepEqual(
      await content.evaluate(() => ({
        color: getComputedStyle(document.querySelector('.headline')!).color,
        banner: getComputedStyle(document.querySelector('.banner')!).backgroundImage.slice(0, 27),
        ran: document.body.getAttribute('data-ran'),
        meta: document.querySelectorAll('meta[http-equiv="refresh"]').length,
      })),
      { color: 'rgb(200, 0, 0)', banner: 'url("data:image/png;base64,', ran: null, meta: 0 },
    );
    assert.deepEqual(await page.locator('main h1').allInnerTexts(), ['Autumn sale']);
  });

  test('an attachment without a filename is offered and saved as attachment-1, the name the API gives it, not a UUID', async () => {
    const id = await send({
      raw:
        'From: ann@sender.test\r\nTo: me@hostile.test\r\nSubject: Unnamed\r\nMIME-Version: 1.0\r\n' +
        'Content-Type: multipart/mixed; boundary=XX\r\n\r\n--XX\r\nContent-Type: text/plain\r\n\r\nsee attached\r\n' +
        '--XX\r\nContent-Type: application/pdf\r\nContent-Disposition: attachment\r\n' +
        'Content-Transfer-Encoding: base64\r\n\r\nJVBERi0xLjQK\r\n--XX--\r\n',
    });
    const served = await fetch(`${server.baseUrl}/api/v2/attachments/${id}/parts/0`, {
      headers: { authorization: `Bearer ${server.apiKey}` },
    });
    await served.arrayBuffer();
    assert.equal(
      served.headers.get('content-disposition'),
      `attachment; filename="attachment-1"; filename*=UTF-8''attachment-1`,
    );
    await open(id);
    const button = page.locator('.attachments button');
    assert.equal(await button.innerText(), 'Download attachment-1');
    const [download] = await Promise.all([page.waitForEvent('download'), button.click()]);
    // Chromium adds the extension of the part's type, as it would to the API's own download.
    assert.equal(download.suggestedFilename(), 'attachment-1.pdf');
  });

  test('an unbroken 600-character subject, header value and 200-character filename wrap: nothing scrolls sideways', async () => {
    const id = await send({
      subject: `Subject${'x'.repeat(600)}`,
      text: 'x',
      headers: { 'X-Long': `v${'y'.repeat(600)}` },
      attachments: [{ filename: `${'z'.repeat(200)}.txt`, content: 'z' }],
    });
    await page.goto(`${server.baseUrl}/#/inbox`);
    await page.locator(`[data-email-id="${id}"]`).waitFor();
    const sideways = () =>
      page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
    assert.equal(await sideways(), 0);
    await open(id);
    await page.locator('summary', { hasText: 'Headers' }).click();
    await page.locator('.headers th', { hasText: 'x-long' }).waitFor();
    assert.equal(await sideways(), 0);
  });

  test('a filename with a right-to-left override shows its real extension: "invoice\\u202Efdp.exe" is no "invoiceexe.pdf"', async () => {
    const id = await send({
      subject: 'Invoice',
      text: 'x',
      attachments: [{ filename: 'invoice\u202Efdp.exe', content: 'MZ', contentType: 'application/octet-stream' }],
    });
    await open(id);
    const button = page.locator('.attachments button');
    assert.equal(await button.innerText(), 'Download invoice\uFFFDfdp.exe');
  });

  test('"Load remote content" from the keyboard: the focus stays on its note, which says the content is loaded', async () => {
    const id = await send({
      subject: 'Remote image',
      html: '<p>Logo</p><img alt="logo" src="http://127.0.0.1:9/logo.png">',
    });
    await open(id);
    await page.getByRole('button', { name: 'Load remote content' }).focus();
    await page.keyboard.press('Enter');
    await page.locator('.remote-note', { hasText: 'Remote content is loaded.' }).waitFor();
    assert.equal(await page.evaluate(() => document.activeElement?.className), 'remote-note');
  });

  test('"Mark unread" and "Archive" relabel their buttons and leave the view be: remote content stays loaded, Headers open', async () => {
    const id = await send({
      subject: 'Keep my view',
      html: '<p>Logo</p><img alt="logo" src="http://127.0.0.1:9/logo.png">',
    });
    await open(id);
    await page.getByRole('button', { name: 'Load remote content' }).click();
    await page.locator('summary', { hasText: 'Headers' }).click();
    await page.getByRole('button', { name: 'Mark unread' }).click();
    await page.getByRole('button', { name: 'Mark read' }).waitFor();
    await page.getByRole('button', { name: 'Archive', exact: true }).click();
    await page.getByRole('button', { name: 'Unarchive' }).waitFor();
    // The old view was built anew: the reader's choice was undone and the images blocked again, Headers closed.
    assert.equal(await page.locator('.remote-note').innerText(), 'Remote content is loaded.');
    assert.match((await page.locator('iframe.html-body').getAttribute('srcdoc')) ?? '', /img-src \* data:/);
    const headers = page.locator('details', { has: page.locator('summary', { hasText: 'Headers' }) });
    assert.equal(await headers.evaluate((details) => (details as HTMLDetailsElement).open), true);
    const listed = await api.get('/api/v2/mail?includeArchived=true&search=subject:keep');
    assert.deepEqual(
      listed.body.emails.map((email: { id: string; isRead: boolean; isArchived: boolean }) => [
        email.id,
        email.isRead,
        email.isArchived,
      ]),
      [[id, false, true]],
    );
  });
});
