import assert from 'node:assert/strict';
import { after, before, describe, type TestContext, test } from 'node:test';
import type { Page } from 'playwright-core';
import { createVerifiedDomain } from '../helpers/domains.ts';
import { sendMail } from '../helpers/smtp.ts';
import { startTcpProxy } from '../helpers/tcp-proxy.ts';
import { browserSkipReason, signIn } from './browser.ts';
import { type ConsoleWorld, startConsoleWorld } from './world.ts';

describe('the console: the live state tells the truth about the event stream', { skip: browserSkipReason }, () => {
  let world: ConsoleWorld;
  let { dns, server, api } = {} as ConsoleWorld;

  before(async () => {
    world = await startConsoleWorld();
    ({ dns, server, api } = world);
    const domain = await createVerifiedDomain(api, dns, 'live.test');
    const address = await api.post('/api/v2/email-addresses', { address: 'me@live.test', domainId: domain.id });
    assert.equal(address.status, 201, JSON.stringify(address.body));
  });
  after(async () => {
    await world?.close();
  });

  /**
   * A page of its own whose clock the test moves (the stream's silence limit and the waits between tries are timers),
   * signed in through a relay the test can break. Counts the stream's requests.
   */
  async function openConsole(t: TestContext, baseUrl: string, apiKey: string, state = 'live') {
    const context = await world.browser.newContext({ viewport: { width: 1280, height: 900 } });
    // Closed whatever the outcome: a stream left open counts against the account's limit.
    t.after(() => context.close());
    const page = await context.newPage();
    await page.clock.install();
    const streams = { opened: 0 };
    page.on('request', (request) => {
      if (new URL(request.url()).pathname === '/api/v2/events') streams.opened++;
    });
    await signIn(page, baseUrl, apiKey);
    await waitForState(page, state);
    await pauseClock(page);
    return { page, streams };
  }

  /** From now on the page's time moves only when the test moves it (half a second on: a pause is never in the past). */
  async function pauseClock(page: Page) {
    await page.clock.pauseAt(await page.evaluate(() => Date.now() + 500));
  }

  async function waitForState(page: Page, state: string) {
    // Polled on a real timer: the page's animation frames run on the clock the test holds.
    await page.waitForFunction((state) => document.getElementById('live-state')?.dataset.state === state, state, {
      polling: 100,
      timeout: 5000,
    });
  }

  /**
   * Moves the page's clock on by `ms` in steps. A try that a step started is answered before the next step: however
   * slow the server, it is not taken for silent because the test moved the clock past the silence limit meanwhile.
   */
  async function elapse(page: Page, ms: number, step = 10_000) {
    for (let done = 0; done < ms; done += step) {
      await page.clock.fastForward(Math.min(step, ms - done));
      // The try begins (its state "reconnecting") once the woken wait's promise settles, after fastForward returns.
      await page.waitForTimeout(50);
      await page.waitForFunction(() => document.getElementById('live-state')?.dataset.state !== 'reconnecting', null, {
        polling: 20,
        timeout: 10_000,
      });
    }
  }

  /** A relay to the server the test can break, and the console's address through it. */
  async function relay(t: TestContext) {
    const proxy = await startTcpProxy({ host: '127.0.0.1', port: Number(new URL(server.baseUrl).port) });
    t.after(() => proxy.close());
    return { proxy, baseUrl: `http://127.0.0.1:${proxy.port}` };
  }

  test('a stream whose network goes silent is "Not live" after 40 s, and is live again with what arrived meanwhile', async (t) => {
    const { proxy, baseUrl } = await relay(t);
    const { page } = await openConsole(t, baseUrl, server.apiKey);
    // Nothing is said to either end, as when a network drops everything: the old console stayed "Live" for ever.
    proxy.stall();
    const sent = await sendMail({ port: server.smtpPort, to: 'me@live.test', subject: 'While silent', text: 'x' });
    assert.equal(sent.code, 250, sent.response);
    await page.clock.fastForward(38_000);
    assert.equal(await page.locator('#live-state').innerText(), 'Live');
    await page.clock.fastForward(3000);
    await waitForState(page, 'disconnected');
    assert.equal(
      await page.locator('#live-state').innerText(),
      'Not live: no word from the server for 40 s. Retrying in 1 s',
    );
    proxy.resume();
    await page.clock.fastForward(1000);
    await waitForState(page, 'live');
    await page.getByRole('link', { name: /While silent/ }).waitFor({ timeout: 5000 });
  });

  test('a server that is gone: "Not live", and each try waits longer than the last, up to 30 s', async (t) => {
    const { proxy, baseUrl } = await relay(t);
    const { page, streams } = await openConsole(t, baseUrl, server.apiKey);
    proxy.cut();
    await waitForState(page, 'disconnected');
    assert.equal(await page.locator('#live-state').innerText(), 'Not live: Mailroom did not answer. Retrying in 1 s');
    const before = streams.opened;
    // Waits of 1, 2, 4, 8, 16 then 30 s: 13 tries in 30 moves of 10 s, where the old console's 2 s made one each.
    await elapse(page, 300_000);
    assert.equal(streams.opened - before, 13);
    assert.equal(await page.locator('#live-state').innerText(), 'Not live: Mailroom did not answer. Retrying in 30 s');
    proxy.restore();
    await page.clock.fastForward(30_000);
    await waitForState(page, 'live');
  });

  test('an account with 20 streams open: the console says so, and asks again after 30 s, 1, 2, 4 and 5 minutes', async (t) => {
    // An account of its own, whose streams are all the test's.
    const apiKey = await server.newAccountKey('streams');
    const held = new AbortController();
    t.after(() => held.abort());
    // Kept referenced: fetch closes the stream of a response that is garbage collected.
    const streams: Response[] = [];
    for (let index = 0; index < 20; index++) {
      const stream = await fetch(`${server.baseUrl}/api/v2/events`, {
        headers: { authorization: `Bearer ${apiKey}` },
        signal: held.signal,
      });
      assert.equal(stream.status, 200);
      streams.push(stream);
    }
    const { page, streams: tries } = await openConsole(t, server.baseUrl, apiKey, 'limited');
    assert.equal(
      await page.locator('#live-state').innerText(),
      'Not live: Too many event streams: an account holds at most 20 open at once; close one first. Retrying in 30 s',
    );
    // The first try, then after 30, 90, 210 and 450 s; the old console asked again at each move of 10 s (60).
    await elapse(page, 600_000);
    assert.equal(tries.opened, 5);
    assert.match(await page.locator('#live-state').innerText(), /Retrying in 300 s$/);
    held.abort();
    assert.equal(streams.length, 20);
    await elapse(page, 300_000);
    await waitForState(page, 'live');
  });
});
