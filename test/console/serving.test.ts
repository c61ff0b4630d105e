import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Browser } from 'playwright-core';
import { startTestApp, type TestApp } from '../helpers/app.ts';
import { type DnsServer, startDnsServer } from '../helpers/dns-server.ts';
import { createVerifiedDomain } from '../helpers/domains.ts';
import { apiClient } from '../helpers/http.ts';
import { sendMail } from '../helpers/smtp.ts';
import { browserSkipReason, launchBrowser, signIn } from './browser.ts';

let dns: DnsServer;
let server: TestApp;

before(async () => {
  dns = await startDnsServer();
  server = await startTestApp({ DNS_SERVERS: dns.address });
  const api = apiClient(server.baseUrl, server.apiKey);
  const domain = await createVerifiedDomain(api, dns, 'keys.test');
  const address = await api.post('/api/v2/email-addresses', { address: 'me@keys.test', domainId: domain.id });
  assert.equal(address.status, 201, JSON.stringify(address.body));
});
after(async () => {
  await server.close();
  await dns.close();
});

describe('GET / and /console/*: the console ships with Mailroom', () => {
  test('GET /: the page as HTML, revalidated on every load, under a policy that allows only its own scripts', async () => {
    const response = await fetch(`${server.baseUrl}/`);
    assert.equal(response.status, 200);
    assert.equal(response.headers.get('content-type'), 'text/html; charset=utf-8');
    assert.equal(response.headers.get('cache-control'), 'no-cache');
    assert.match(response.headers.get('content-security-policy')!, /script-src 'self';/);
    const page = await response.text();
    assert.match(page, /<script type="module" src="\/console\/app.js"><\/script>/);
    assert.doesNotMatch(page, /https?:\/\//, 'no asset comes from another host');
  });

  test('GET /console/<file>: each asset with its content type, and 304 when the ETag still matches', async () => {
    const expected = {
      'app.js': 'text/javascript; charset=utf-8',
      'console.css': 'text/css; charset=utf-8',
      'inbox.js': 'text/javascript; charset=utf-8',
    };
    for (const [name, type] of Object.entries(expected)) {
      const response = await fetch(`${server.baseUrl}/console/${name}`);
      assert.equal(response.status, 200, name);
      assert.equal(response.headers.get('content-type'), type);
      assert.equal(response.headers.get('cache-control'), 'no-cache');
      await response.arrayBuffer();
      const again = await fetch(`${server.baseUrl}/console/${name}`, {
        headers: { 'if-none-match': response.headers.get('etag')! },
      });
      assert.equal(again.status, 304);
    }
  });

  test('GET /console/<unknown>: the JSON 404 of any unknown route', async () => {
    const response = await fetch(`${server.baseUrl}/console/secrets.txt`);
    assert.equal(response.status, 404);
    assert.deepEqual(await response.json(), { error: 'Route GET /console/secrets.txt not found' });
  });

  test('CONSOLE=false: / is the JSON 404 again and the API is unchanged', async () => {
    const off = await startTestApp({ DNS_SERVERS: '127.0.0.1:9', CONSOLE: 'false' });
    try {
      const page = await fetch(`${off.baseUrl}/`);
      assert.equal(page.status, 404);
      assert.deepEqual(await page.json(), { error: 'Route GET / not found' });
      const asset = await fetch(`${off.baseUrl}/console/app.js`);
      assert.equal(asset.status, 404);
      await asset.arrayBuffer();
      const api = await fetch(`${off.baseUrl}/api/v2/domains`, { headers: { authorization: `Bearer ${off.apiKey}` } });
      assert.equal(api.status, 200);
      await api.arrayBuffer();
    } finally {
      await off.close();
    }
  });
});

describe('the console in a browser, without a mouse or a wide screen', { skip: browserSkipReason }, () => {
  let browser: Browser;
  before(async () => {
    browser = await launchBrowser();
  });
  after(() => browser?.close());

  test("a wrong key is refused with the API's own error, and nothing is stored", async () => {
    const page = await browser.newPage();
    await page.goto(`${server.baseUrl}/`);
    await page.getByLabel('API key').fill('mr_wrong_key_0000000000');
    await page.getByRole('button', { name: 'Sign in' }).click();
    assert.equal(await page.getByRole('alert').textContent(), 'Invalid or missing API key');
    assert.equal(await page.evaluate(() => sessionStorage.length), 0);
    await page.close();
  });

  test('no answer, a proxy\'s HTML 502, a pasted key with a hidden character: each said plainly, not "Failed to fetch"', async () => {
    const page = await browser.newPage();
    await page.goto(`${server.baseUrl}/`);
    const signInWith = async (key: string) => {
      await page.getByLabel('API key').fill(key);
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.getByRole('button', { name: 'Sign in' }).and(page.locator(':enabled')).waitFor();
      return page.getByRole('alert').innerText();
    };
    const unreachable = 'Mailroom did not answer: the server may be down or the network cut. Try again shortly.';
    await page.route('**/api/v2/**', (route) => route.abort('connectionrefused'));
    assert.equal(await signInWith(server.apiKey), unreachable);
    await page.unroute('**/api/v2/**');
    await page.route('**/api/v2/**', (route) =>
      route.fulfill({ status: 502, contentType: 'text/html', body: '<h1>502 Bad Gateway</h1>' }),
    );
    assert.equal(await signInWith(server.apiKey), 'HTTP 502 Bad Gateway');
    await page.unroute('**/api/v2/**');
    // A zero-width space survives trim() and cannot go in a header: the browser would refuse to send it.
    assert.equal(
      await signInWith(`${server.apiKey}\u200b`),
      'An API key has no spaces or non-ASCII characters: check what was pasted.',
    );
    assert.equal(await page.evaluate(() => sessionStorage.length), 0);
    await page.getByLabel('API key').fill(server.apiKey);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { name: 'Inbox' }).waitFor();
    await page.route('**/api/v2/mail?**', (route) => route.abort('connectionrefused'));
    await page.goto(`${server.baseUrl}/#/inbox?search=offline`);
    await page.getByRole('heading', { name: 'Something went wrong' }).waitFor();
    assert.equal(await page.getByRole('alert').innerText(), unreachable);
    await page.close();
  });

  test('keyboard only: sign in with Enter, open a message with Enter, leave it with Escape', async () => {
    const sent = await sendMail({
      port: server.smtpPort,
      to: 'me@keys.test',
      subject: 'Keyboard message',
      text: 'typed',
    });
    const page = await browser.newPage();
    await page.goto(`${server.baseUrl}/`);
    // The key field has focus on arrival; everything after is keys.
    assert.equal(await page.evaluate(() => document.activeElement?.getAttribute('name')), 'apiKey');
    await page.keyboard.type(server.apiKey);
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { name: 'Inbox' }).waitFor();
    assert.equal(await page.evaluate(() => sessionStorage.getItem('mailroom.apiKey')), server.apiKey);
    assert.equal(sent.code, 250, sent.response);
    await page.getByRole('link', { name: /Keyboard message/ }).waitFor();
    let focused = '';
    for (let presses = 0; presses < 40 && !focused.includes('Keyboard message'); presses++) {
      await page.keyboard.press('Tab');
      focused = await page.evaluate(() => document.activeElement?.textContent ?? '');
    }
    assert.match(focused, /Keyboard message/, 'the message row is reachable with Tab');
    const outline = await page.evaluate(() => getComputedStyle(document.activeElement!).outlineStyle);
    assert.equal(outline, 'solid', 'the focused row shows a visible focus ring');
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { name: 'Keyboard message' }).waitFor();
    await page.keyboard.press('Escape');
    await page.getByRole('heading', { name: 'Inbox' }).waitFor();
    await page.close();
  });

  test('375×812 phone viewport: the inbox and setup fit the width, nothing scrolls sideways', async () => {
    const context = await browser.newContext({ viewport: { width: 375, height: 812 } });
    const page = await context.newPage();
    await signIn(page, server.baseUrl, server.apiKey);
    for (const hash of ['#/inbox', '#/setup', '#/deliveries']) {
      await page.goto(`${server.baseUrl}/${hash}`);
      await page.locator('h1').first().waitFor();
      // Not 'networkidle': the open event stream keeps a request in flight for as long as the page lives.
      await page.waitForFunction(() => !document.querySelector('.loading'));
      const width = await page.evaluate(() => document.documentElement.scrollWidth);
      assert.ok(width <= 375, `${hash} is ${width}px wide`);
      assert.equal(await page.getByRole('navigation', { name: 'Sections' }).isVisible(), true);
    }
    await context.close();
  });
});
