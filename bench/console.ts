/**
 * The console's first inbox page over the search scenario's loaded database (`BENCH=console`; `SEARCH_KEEP=1`
 * reuses a loaded one, see bench/search.ts): headless Chromium loads `/#/inbox` already signed in, and the time is
 * the page's own clock from navigation start to the frame in which the first page of mail rows is on screen.
 */
import { createHash } from 'node:crypto';
import { chromium } from 'playwright-core';
import { percentile, type QueryTiming } from './search.ts';

const PAGE_ROWS = 50;
const RUNS = 10;
const WARM_UPS = 2;

export async function timeConsoleFirstPage(httpUrl: string, apiKey: string): Promise<QueryTiming[]> {
  const browser = await chromium.launch({
    executablePath: '/usr/bin/chromium',
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--no-first-run'],
  });
  try {
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    await context.addInitScript((key) => sessionStorage.setItem('mailroom.apiKey', key), apiKey);
    const samples: number[] = [];
    let ids: string[] = [];
    for (let run = 0; run < WARM_UPS + RUNS; run++) {
      const page = await context.newPage();
      await page.goto(`${httpUrl}/#/inbox`);
      const shownAt = await page.waitForFunction(
        (rows) => document.querySelectorAll('.mail-row').length >= rows && performance.now(),
        PAGE_ROWS,
        { polling: 'raf', timeout: 30_000 },
      );
      if (run >= WARM_UPS) samples.push((await shownAt.jsonValue()) as number);
      ids = await page.$$eval('.mail-row', (rows) =>
        rows.map((row) => row.getAttribute('href')!.slice('#/mail/'.length)),
      );
      await page.close();
    }
    samples.sort((a, b) => a - b);
    return [
      {
        name: 'console: first inbox page on screen',
        total: String(ids.length),
        page: createHash('sha256').update(ids.join(',')).digest('hex').slice(0, 8),
        p50Ms: percentile(samples, 50),
        p95Ms: percentile(samples, 95),
      },
    ];
  } finally {
    await browser.close();
  }
}
