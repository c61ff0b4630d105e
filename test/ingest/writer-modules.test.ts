import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { Worker } from 'node:worker_threads';

/**
 * Started as ingest starts it, with a hook that records every package the thread resolves; once the thread's module
 * has run (it opens the database and waits for rows to write), it reports them.
 */
const RECORDING_WRITER = `
const { registerHooks } = require('node:module');
const { parentPort, workerData } = require('node:worker_threads');
const packages = new Set();
registerHooks({
  resolve(specifier, context, next) {
    const resolved = next(specifier, context);
    const found = /\\/node_modules\\/((?:@[^/]+\\/)?[^/]+)\\//.exec(resolved.url);
    if (found) packages.add(found[1]);
    return resolved;
  },
});
import(workerData.module).then(() => parentPort.postMessage({ packages: [...packages].sort() }));
`;

test("ingest's writer thread loads no MIME parser, HTML sanitizer or SMTP client", async () => {
  const dir = await mkdtemp(join(tmpdir(), 'mailroom-writer-'));
  const worker = new Worker(RECORDING_WRITER, {
    eval: true,
    workerData: {
      module: new URL('../../src/ingest/writer-thread.ts', import.meta.url).href,
      database: { kind: 'sqlite', file: join(dir, 'mailroom.sqlite'), synchronous: 'FULL' },
    },
  });
  try {
    const packages = await new Promise<string[]>((resolve, reject) => {
      worker.on('message', (message: { packages?: string[] }) => message.packages && resolve(message.packages));
      worker.once('error', reject);
    });
    // It does load what it writes with: the database's and the logger's packages.
    assert.ok(packages.includes('kysely') && packages.includes('pino'), packages.join(', '));
    assert.deepEqual(
      packages.filter((name) => ['mailparser', 'sanitize-html', 'nodemailer', 'mailauth'].includes(name)),
      [],
    );
  } finally {
    await worker.terminate();
    await rm(dir, { recursive: true, force: true });
  }
});
