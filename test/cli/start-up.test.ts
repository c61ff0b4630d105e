import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { createInstallation, runScript } from '../helpers/process.ts';

/** Starts `npm start` with these settings on a fresh installation and waits for it to exit. */
async function startFails(extra: Record<string, string>) {
  const installation = await createInstallation(extra);
  try {
    return await runScript('src/main.ts', [], installation.env);
  } finally {
    await installation.remove();
  }
}

describe('start-up errors say what to do, without a stack trace', () => {
  const cases: Array<[Record<string, string>, string]> = [
    [{ LOG_LEVEL: 'verbose' }, 'LOG_LEVEL="verbose" is not one of fatal, error, warn, info, debug, trace, silent'],
    [{ SQLITE_SYNCHRONOUS: 'fast' }, 'SQLITE_SYNCHRONOUS="fast" is not one of FULL, NORMAL, EXTRA'],
    [{ PORT: 'eighty' }, 'PORT="eighty" is not a whole number from 0 to 65535'],
    [{ SMTP_PORT: '70000' }, 'SMTP_PORT="70000" is not a whole number from 0 to 65535'],
    [{ SUBADDRESSING: 'yes' }, 'SUBADDRESSING="yes" is not true or false'],
    [{ SMTP_MAX_CONNECTIONS: '0' }, 'SMTP_MAX_CONNECTIONS="0" is not a whole number that is at least 1'],
    [{ DELIVERY_RETRY_SCALE: '2' }, 'DELIVERY_RETRY_SCALE="2" is not a number that is greater than 0 and at most 1'],
    [{ DATABASE_URL: 'mysql://x' }, 'DATABASE_URL="mysql://x" is not a postgres:// URL'],
    [{ BLOB_STORE: 'disk' }, 'BLOB_STORE="disk" is not fs or s3://bucket[/prefix]'],
    [{ MAILROOM_API_KEY: 'short' }, 'MAILROOM_API_KEY="short" is not a text of at least 16 characters'],
    [
      { DNS_SERVERS: '1.1.1.1,dns.google' },
      'DNS_SERVERS="1.1.1.1,dns.google" is not a comma-separated list of IP addresses, each optionally with :port ' +
        '(e.g. 1.1.1.1,[2606:4700::1111]:53)',
    ],
  ];
  for (const [env, message] of cases) {
    test(`${Object.keys(env)[0]}: ${message}`, async () => {
      const result = await startFails(env);
      assert.equal(result.code, 1);
      assert.equal(result.stderr, `Invalid configuration: ${message}\n`);
      assert.equal(result.stdout, '');
    });
  }
});
