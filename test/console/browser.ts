import { existsSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { type Browser, chromium, type Page } from 'playwright-core';

/** Debian's Chromium; `.ci/run` installs it. Nothing is downloaded at run time. */
export const CHROMIUM_PATH = '/usr/bin/chromium';

/** Where the test run writes the console's screenshots; CI keeps the folder as output, git ignores it. */
export const SCREENSHOT_DIR = resolve(import.meta.dirname, '../../artifacts/screenshots');

/**
 * Why the browser tests cannot run here, or undefined when they can. In CI they always run (a missing Chromium then
 * fails them), so a broken install is never mistaken for a pass.
 */
export const browserSkipReason =
  existsSync(CHROMIUM_PATH) || process.env.CI
    ? undefined
    : `Chromium is not installed at ${CHROMIUM_PATH} (apt-get install chromium): console browser tests skipped`;

export function launchBrowser(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM_PATH,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--no-first-run',
      '--disable-quic',
    ],
  });
}

/** Signs in through the form, as a person would, and waits for the inbox. */
export async function signIn(page: Page, baseUrl: string, apiKey: string) {
  await page.goto(`${baseUrl}/`);
  await page.getByLabel('API key').fill(apiKey);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('heading', { name: 'Inbox' }).waitFor();
}

export async function screenshot(page: Page, name: string) {
  await mkdir(SCREENSHOT_DIR, { recursive: true });
  await page.screenshot({ path: join(SCREENSHOT_DIR, `${name}.png`), fullPage: false });
}
