import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Page } from 'playwright-core';
import { browserSkipReason } from './browser.ts';
import { type ConsoleWorld, startConsoleWorld } from './world.ts';

describe('the API reference at /docs', { skip: browserSkipReason }, () => {
  let world: ConsoleWorld;
  let { server, page } = {} as ConsoleWorld;

  before(async () => {
    world = await startConsoleWorld();
    ({ server, page } = world);
  });
  after(async () => {
    await world?.close();
  });

  /** What the page asked of other origins (there is no network here but loopback) and what its policy refused. */
  function watch(page: Page) {
    const seen = { elsewhere: [] as string[], refused: [] as string[] };
    page.on('request', (request) => {
      if (new URL(request.url()).origin !== server.baseUrl && !request.url().startsWith('data:'))
        seen.elsewhere.push(request.url());
    });
    page.on('console', (message) => {
      if (/Content Security Policy/i.test(message.text())) seen.refused.push(message.text());
    });
    return seen;
  }

  test('GET /docs/ has a Content-Security-Policy that allows only its own origin: no inline or remote script', async () => {
    const response = await fetch(`${server.baseUrl}/docs/`);
    await response.text();
    assert.equal(response.status, 200);
    assert.equal(
      response.headers.get('content-security-policy'),
      "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; " +
        "connect-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'; form-action 'none'",
    );
    // The scripts and the document it renders are held to the same policy as the page.
    for (const path of ['/docs/static/swagger-initializer.js', '/docs/json']) {
      const asset = await fetch(`${server.baseUrl}${path}`);
      await asset.arrayBuffer();
      assert.equal(asset.status, 200, path);
      assert.match(asset.headers.get('content-security-policy') ?? '', /^default-src 'self'; script-src 'self';/, path);
    }
  });

  test('/docs renders every operation under its policy, asks nothing of other origins, and "Try it out" works', async () => {
    const seen = watch(page);
    await page.goto(`${server.baseUrl}/docs`);
    await page.getByRole('heading', { name: /Mailroom API/ }).waitFor();
    const document = await (await fetch(`${server.baseUrl}/docs/json`)).json();
    // The operations and the webhook Mailroom posts (email.received), each a block of its own.
    const operations = [document.paths, document.webhooks].flatMap((items: Record<string, object>) =>
      Object.values(items).flatMap((item) => Object.keys(item)),
    );
    assert.equal(await page.locator('.opblock').count(), operations.length);
    const operation = page.locator('.opblock-get', { has: page.locator('[data-path="/api/v2/mail"]') });
    await operation.locator('.opblock-summary-control').click();

    // The bearer key as a developer gives it, through the Authorize dialog (a form the policy must not break).
    await page.locator('.auth-wrapper .authorize').click();
    await page.locator('.modal-ux input[type=text]').fill(server.apiKey);
    await page.locator('.modal-ux button[type=submit]').click();
    await page.locator('.modal-ux .btn-done').click();
    await page.getByRole('button', { name: 'Try it out' }).click();
    await page.getByRole('button', { name: 'Execute' }).click();
    assert.equal(await page.locator('.live-responses-table tbody .response-col_status').innerText(), '200');
    assert.deepEqual(seen.refused, []);
    assert.deepEqual(seen.elsewhere, []);
  });
});
