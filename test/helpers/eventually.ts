import assert from 'node:assert/strict';

/** Polls `check` until it holds, a bounded number of times: for what happens on a timer or a connection of its own. */
export async function eventually(check: () => Promise<boolean>, what: string): Promise<void> {
  for (let attempt = 0; attempt < 300; attempt++) {
    if (await check()) return;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  assert.fail(`never happened: ${what}`);
}
