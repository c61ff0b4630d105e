import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { describe, test } from 'node:test';
import { loadConfig } from '../../src/config/index.ts';
import { ConfigError } from '../../src/core/index.ts';
import { TEST_DATABASE_URL } from '../helpers/app.ts';
import { createInstallation, logEntry, runCli, runScript, startServerProcess } from '../helpers/process.ts';
import { startS3Server } from '../helpers/s3.ts';

/** Starts `npm start` with these settings on a fresh installation and waits for it to exit (killed if it starts). */
async function startFails(extra: Record<string, string>) {
  const installation = await createInstallation(extra);
  try {
    return await runScript('src/main.ts', [], installation.env, undefined, 20_000);
  } finally {
    await installation.remove();
  }
}

async function occupiedPort(): Promise<{ port: number; server: Server }> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { port: (server.address() as { port: number }).port, server };
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
    // Numbers are decimal: read loosely, these were port 1, analysis on the main thread, 16 connections, no DATA
    // rate check and a SIZE of 1e+30.
    [{ PORT: 'true' }, 'PORT="true" is not a whole number from 0 to 65535'],
    [{ INGEST_WORKERS: '0.5' }, 'INGEST_WORKERS="0.5" is not a whole number from 0 to 64'],
    [{ SMTP_MAX_CONNECTIONS: '0x10' }, 'SMTP_MAX_CONNECTIONS="0x10" is not a whole number that is at least 1'],
    [
      { SMTP_MIN_DATA_RATE_BYTES_PER_SECOND: 'false' },
      'SMTP_MIN_DATA_RATE_BYTES_PER_SECOND="false" is not a whole number that is at least 0',
    ],
    [
      { SMTP_MAX_MESSAGE_BYTES: '1e30', SMTP_MAX_BUFFERED_BYTES: '1e31' },
      'SMTP_MAX_MESSAGE_BYTES="1e30" is not a whole number that is at least 1024',
    ],
    // Longer than a Node timer can wait: the timeout would fire at once and close every SMTP connection.
    [
      { SMTP_CONNECTION_TIMEOUT_SECONDS: '3000000' },
      'SMTP_CONNECTION_TIMEOUT_SECONDS="3000000" is not a number that is greater than 0 and at most 2147483',
    ],
    // "Never give up" written as a huge number: the verifier's cut-off date would be invalid, failing every pass.
    [
      { DOMAIN_VERIFY_GIVE_UP_HOURS: '1e10' },
      'DOMAIN_VERIFY_GIVE_UP_HOURS="1e10" is not a number that is greater than 0 and at most 876000',
    ],
    [
      { DATABASE_SCHEMA: 'a'.repeat(44) },
      `DATABASE_SCHEMA="${'a'.repeat(44)}" is not a schema name of a-z, 0-9 and _ (up to 43)`,
    ],
    [{ BLOB_STORE: 'disk' }, 'BLOB_STORE="disk" is not fs or s3://bucket[/prefix]'],
    // Read loosely, these were the prefix `archive` (the query dropped) and a bucket named `mail:9000`. (No instance
    // metadata service is asked for credentials, should a start get that far.)
    ...['s3://mail/archive?region=eu', 's3://mail:9000/archive'].map((store): [Record<string, string>, string] => [
      { BLOB_STORE: store, AWS_EC2_METADATA_DISABLED: 'true' },
      `BLOB_STORE="${store}" is not fs or s3://bucket[/prefix]`,
    ]),
    // Published as every domain's MX record, which must name a host: these were taken as they were.
    ...['-', '192.0.2.25', 'mx..example.com'].map((host): [Record<string, string>, string] => [
      { MX_HOST: host },
      `MX_HOST="${host}" is not a host name such as mx.example.com (an MX record cannot name an IP address)`,
    ]),
    // The base of every attachment downloadUrl: these made `https://mail.example/?via=proxy/api/e2/attachments/...`,
    // a URL that ends in the fragment, and one that hands the credentials to every webhook receiver.
    ...['https://mail.example/?via=proxy', 'https://mail.example/mailroom#top', 'https://ops:s3cret@mail.example'].map(
      (url): [Record<string, string>, string] => [
        { PUBLIC_URL: url },
        `PUBLIC_URL="${url.replace('s3cret', '***')}" is not an http:// or https:// URL without user info, query or fragment`,
      ],
    ),
    // The SDK takes no credentials from the URL; they were printed in the banner and the start-up log.
    ...['https://minio:s3cret@s3.example:9000', 'https://s3.example/?x-id=1'].map(
      (url): [Record<string, string>, string] => [
        { S3_ENDPOINT: url },
        `S3_ENDPOINT="${url.replace('s3cret', '***')}" is not an http:// or https:// URL without user info, query or fragment`,
      ],
    ),
    // The patterns pass these; the URL parser does not.
    [{ SPAMD_URL: 'spamd://host:99999' }, 'SPAMD_URL="spamd://host:99999" is not spamd://host[:port]'],
    [{ SMTP_RELAY_URL: 'smtp://[bad' }, 'SMTP_RELAY_URL="smtp://[bad" is not an smtp:// or smtps:// URL'],
    // Credentials are not repeated: start-up errors end up in the service's log.
    [
      { MAILROOM_API_KEY: 'short' },
      'MAILROOM_API_KEY (not shown) is not at least 16 visible ASCII characters, without spaces',
    ],
    // No Authorization header could carry it: the server would start with a key nobody can use.
    [
      { MAILROOM_API_KEY: 'our shared team key 2026' },
      'MAILROOM_API_KEY (not shown) is not at least 16 visible ASCII characters, without spaces',
    ],
    [
      { MAILROOM_API_KEY: 'clé-de-la-boîte-aux-lettres' },
      'MAILROOM_API_KEY (not shown) is not at least 16 visible ASCII characters, without spaces',
    ],
    [
      { DATABASE_URL: 'postgres://mailroom:s3cr/t@db.example:5432/mail' },
      'DATABASE_URL="postgres://mailroom:***@db.example:5432/mail" is not a postgres:// URL',
    ],
    [
      { SMTP_RELAY_URL: 'smtp://relay:p#ss@w@rd@smtp.example:587' },
      'SMTP_RELAY_URL="smtp://relay:***@smtp.example:587" is not an smtp:// or smtps:// URL',
    ],
    [
      { SMTP_MAX_BUFFERED_BYTES: '1048576' },
      'SMTP_MAX_BUFFERED_BYTES=1048576 is less than SMTP_MAX_MESSAGE_BYTES=41943040',
    ],
    [
      { METRICS: 'false', METRICS_PORT: '9464' },
      'METRICS_PORT=9464 is set but METRICS=false turns metrics off: unset one',
    ],
    // Set but naming no server: these were the system resolvers, which the operator meant not to use.
    ...[',', ' , '].map((servers): [Record<string, string>, string] => [
      { DNS_SERVERS: servers },
      `DNS_SERVERS="${servers}" is not a comma-separated list of IP addresses, each optionally with :port ` +
        '(e.g. 1.1.1.1,[2606:4700::1111]:53)',
    ]),
    [
      { DNS_SERVERS: '1.1.1.1,dns.google' },
      'DNS_SERVERS="1.1.1.1,dns.google" is not a comma-separated list of IP addresses, each optionally with :port ' +
        '(e.g. 1.1.1.1,[2606:4700::1111]:53)',
    ],
  ];
  const refusals: Array<[Record<string, string>, string]> = [
    [
      { TLS_CERT_PATH: '/nonexistent/cert.pem', TLS_KEY_PATH: '/nonexistent/key.pem' },
      "Cannot start: ENOENT: no such file or directory, open '/nonexistent/cert.pem'",
    ],
    [{ DATABASE_URL: 'postgres://postgres@127.0.0.1:9/test' }, 'Cannot start: connect ECONNREFUSED 127.0.0.1:9'],
  ];
  for (const [env, message] of refusals) {
    test(`what the machine refuses is one line too: ${message}`, async () => {
      const result = await startFails(env);
      assert.equal(result.code, 1);
      assert.equal(result.stderr, `${message}\n`);
      assert.equal(result.stdout, '');
    });
  }
  // Each start reads its configuration through loadConfig before it loads anything else: the cases are checked there,
  // and a few through a real start show that its refusal is what the process prints.
  for (const [env, message] of cases) {
    test(`${Object.keys(env)[0]}: ${message}`, () => {
      assert.throws(
        () => loadConfig({ DATA_DIR: tmpdir(), ...env }),
        (error) => {
          assert.ok(error instanceof ConfigError, String(error));
          assert.equal(error.message, `Invalid configuration: ${message}`);
          return true;
        },
      );
    });
  }
  // A plain value, a credential not shown, a URL's password hidden.
  const startedCases = [/^LOG_LEVEL=/, /^MAILROOM_API_KEY \(not shown\)/, /^DATABASE_URL=".*\*\*\*/].map(
    (shape) => cases.find(([, message]) => shape.test(message))!,
  );
  test(`a start with a refused configuration prints that one line and exits 1 (${startedCases.length} cases)`, async () => {
    for (const [env, message] of startedCases) {
      const result = await startFails(env);
      assert.equal(result.code, 1, message);
      assert.equal(result.stderr, `Invalid configuration: ${message}\n`);
      assert.equal(result.stdout, '');
    }
  });

  for (const [variable, other] of [
    ['PORT', 'SMTP_PORT'],
    ['SMTP_PORT', 'PORT'],
  ] as const) {
    test(`${variable} in use: exit 1 naming the port and the variable, and no key printed`, async () => {
      const { port, server } = await occupiedPort();
      try {
        const result = await startFails({ [variable]: String(port), [other]: '0' });
        assert.equal(result.code, 1);
        assert.equal(
          result.stderr,
          `${variable} ${port} is in use: stop what listens there, or set ${variable} to a free port\n`,
        );
        assert.doesNotMatch(result.stdout, /mr_/);
      } finally {
        server.close();
      }
    });
  }

  for (const [variable, other] of [
    ['HOST', 'SMTP_HOST'],
    ['SMTP_HOST', 'HOST'],
  ] as const) {
    test(`${variable} not an address of this machine: exit 1 naming ${variable}, not the port`, async () => {
      // 192.0.2.1 is TEST-NET-1: no machine has it.
      const result = await startFails({ [variable]: '192.0.2.1', [other]: '127.0.0.1' });
      assert.equal(result.code, 1);
      assert.equal(
        result.stderr,
        `${variable} 192.0.2.1 is not an address of this machine (EADDRNOTAVAIL): set ${variable} to one, or 0.0.0.0\n`,
      );
      assert.equal(result.stdout, '');
    });
  }

  test('an S3 bucket that does not exist, or no AWS credentials: one line, no stack trace', async () => {
    const s3 = await startS3Server();
    try {
      const missingBucket = await startFails({ ...s3.env, BLOB_STORE: 's3://no-such-bucket/mail' });
      assert.equal(missingBucket.code, 1);
      assert.equal(
        missingBucket.stderr,
        'Cannot start: the S3 blob store (BLOB_STORE, S3_ENDPOINT, AWS credentials) refused: ' +
          'The specified bucket does not exist\n',
      );
      const { AWS_ACCESS_KEY_ID: _id, AWS_SECRET_ACCESS_KEY: _secret, ...withoutCredentials } = s3.env;
      // No ~/.aws to find, and no instance metadata service to ask.
      const anonymous = await startFails({
        ...withoutCredentials,
        HOME: '/nonexistent',
        AWS_EC2_METADATA_DISABLED: 'true',
      });
      assert.equal(anonymous.code, 1);
      assert.equal(
        anonymous.stderr,
        'Cannot start: the S3 blob store (BLOB_STORE, S3_ENDPOINT, AWS credentials) refused: ' +
          'Could not load credentials from any providers\n',
      );
    } finally {
      await s3.close();
    }
  });

  test('a MAILROOM_API_KEY of another account: exit 1 with one line naming it, and nothing left listening', async () => {
    const installation = await createInstallation();
    try {
      assert.equal((await runCli(['migrate', '--create'], installation.env)).code, 0);
      const other = await runCli(['keys', 'create', '--account', 'other'], installation.env);
      assert.equal(other.code, 0, other.stderr);
      const env = { ...installation.env, MAILROOM_API_KEY: other.stdout.trim() };
      const result = await runScript('src/main.ts', [], env, undefined, 20_000);
      assert.equal(result.code, 1);
      assert.equal(
        result.stderr,
        'MAILROOM_API_KEY is a key of another account than "default": unset it, or set a key of "default"\n',
      );
      assert.equal(result.stdout, '');
    } finally {
      await installation.remove();
    }
  });

  test('a second server on one DATA_DIR is refused while the first runs, and starts once it is killed', async () => {
    const installation = await createInstallation();
    try {
      const first = await startServerProcess(installation.env);
      const second = await runScript('src/main.ts', [], installation.env);
      assert.equal(second.code, 1);
      const busy = `DATA_DIR ${installation.dataDir} is in use by another Mailroom process: `;
      assert.equal(
        second.stderr,
        TEST_DATABASE_URL
          ? // Another DATA_DIR would be no advice here: it would start on the same database without these messages.
            `${busy}with BLOB_STORE=fs the installation's messages are stored in it, where no process on another ` +
              'DATA_DIR finds them; to run several processes on PostgreSQL, use an S3 BLOB_STORE\n'
          : `${busy}one process per DATA_DIR on SQLite or with BLOB_STORE=fs; set DATA_DIR to another directory, or ` +
              'run several processes on PostgreSQL (DATABASE_URL) with an S3 BLOB_STORE\n',
      );
      assert.equal(second.stdout, '');
      assert.equal((await fetch(`${first.httpUrl}/readyz`)).status, 200);
      // The operating system lets go of a killed process's lock: no stale lock to remove by hand.
      await first.stop('SIGKILL');
      const third = await startServerProcess(installation.env);
      assert.equal(await third.stop(), 0);
    } finally {
      await installation.remove();
    }
  });

  test('a key not printed because start-up failed is printed by the next start', async () => {
    const { port, server } = await occupiedPort();
    const installation = await createInstallation();
    try {
      const failed = await runScript('src/main.ts', [], { ...installation.env, SMTP_PORT: String(port) });
      assert.equal(failed.code, 1);
      server.close();
      const started = await startServerProcess(installation.env);
      assert.match(started.stdout(), /^ {4}mr_[A-Za-z0-9]{40}$/m);
      assert.equal(await started.stop(), 0);
    } finally {
      server.close();
      await installation.remove();
    }
  });
});

describe('start banner', () => {
  test('names version, database, blob store, data folder, real bind addresses, MX host and DNS servers', async () => {
    const installation = await createInstallation({ LOG_LEVEL: 'INFO', DNS_SERVERS: '127.0.0.1:5399' });
    const server = await startServerProcess(installation.env);
    try {
      const { dataDir } = installation;
      const out = server.stdout();
      const http = server.httpUrl.replace('http://', '');
      const smtp = out.match(/^ {2}SMTP {6}(127\.0\.0\.1:\d+)$/m)?.[1];
      assert.ok(smtp && !smtp.endsWith(':0'), out);
      const database = TEST_DATABASE_URL
        ? `PostgreSQL postgres@127.0.0.1:5432/test schema ${installation.env.DATABASE_SCHEMA}`
        : `SQLite ${dataDir}/mailroom.sqlite`;
      const lines = [
        'Mailroom 0.1.0',
        `  Database  ${database}`,
        `  Blobs     filesystem ${dataDir}/blobs`,
        `  Data      ${dataDir}`,
        `  HTTP      ${http} (console at ${server.httpUrl}/, API at ${server.httpUrl}, docs at ${server.httpUrl}/docs)`,
        `  SMTP      ${smtp}`,
        '  MX host   mx.mailroom.test',
        '  DNS       127.0.0.1:5399',
      ];
      assert.ok(out.includes(`${lines.join('\n')}\n`), out);
      const logged = await logEntry(server, 'mailroom started');
      assert.deepEqual(
        { ...logged, time: undefined },
        {
          level: 30,
          time: undefined,
          msg: 'mailroom started',
          version: '0.1.0',
          database,
          blobStore: `filesystem ${dataDir}/blobs`,
          dataDir,
          http,
          smtp,
          mxHost: 'mx.mailroom.test',
          dnsServers: ['127.0.0.1:5399'],
        },
      );
      assert.doesNotMatch(out, /password|Warning/);
    } finally {
      await server.stop();
      await installation.remove();
    }
  });

  test('METRICS_PORT: the banner and the log name the metrics listener, and the URL it prints serves metrics', async () => {
    const installation = await createInstallation({ LOG_LEVEL: 'info', METRICS_PORT: '0' });
    const server = await startServerProcess(installation.env);
    try {
      // Port 0 is any free port: without the banner, no one could tell which the scraper should ask.
      const line = server.stdout().match(/^ {2}Metrics {3}(127\.0\.0\.1:(\d+)) \((\S+), no key\)$/m);
      assert.ok(line, server.stdout());
      const [, listener, port, url] = line;
      assert.notEqual(port, '0');
      assert.equal(url, `http://${listener}/metrics`);
      const scraped = await fetch(url!);
      assert.equal(scraped.status, 200);
      assert.match(await scraped.text(), /^# HELP /m);
      assert.equal((await logEntry(server, 'mailroom started')).metrics, listener);
    } finally {
      await server.stop();
      await installation.remove();
    }
  });

  test('a short MX_HOST is warned about, on stdout and in the log', async () => {
    const installation = await createInstallation({ LOG_LEVEL: 'warn', MX_HOST: 'mailbox' });
    const server = await startServerProcess(installation.env);
    try {
      const warning = 'MX_HOST "mailbox" is a short host name: set MX_HOST to this server\'s public DNS name';
      assert.ok(
        server
          .stdout()
          .includes(`Warning: ${warning} (a domain's MX and SPF records follow it at the domain's next check)\n`),
        server.stdout(),
      );
      const logged = await logEntry(server, warning);
      assert.deepEqual([logged.level, logged.mxHost], [40, 'mailbox']);
    } finally {
      await server.stop();
      await installation.remove();
    }
  });

  test('durations in seconds are used to the millisecond: 2.01 and 1.001 seconds start the server', async () => {
    // In binary, 2.01 * 1000 is 2009.9999999999998, a fraction of a millisecond the HTTP server refused with a stack.
    const installation = await createInstallation({
      HTTP_KEEP_ALIVE_TIMEOUT_SECONDS: '2.01',
      HTTP_REQUEST_TIMEOUT_SECONDS: '1.001',
    });
    try {
      const server = await startServerProcess(installation.env);
      assert.equal((await fetch(`${server.httpUrl}/readyz`)).status, 200);
      assert.equal(await server.stop(), 0);
    } finally {
      await installation.remove();
    }
  });

  test('enum values are read without regard to case', async () => {
    const installation = await createInstallation({ LOG_LEVEL: 'WARN', SQLITE_SYNCHRONOUS: 'normal' });
    const server = await startServerProcess(installation.env);
    try {
      assert.doesNotMatch(server.stdout(), /"level":30/, 'LOG_LEVEL=WARN leaves info lines out');
      assert.equal(await server.stop(), 0);
    } finally {
      await installation.remove();
    }
  });
});
