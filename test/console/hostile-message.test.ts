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
});
