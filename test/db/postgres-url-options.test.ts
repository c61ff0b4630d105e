import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, test } from 'node:test';
import pg from 'pg';
import { TEST_DATABASE_URL } from '../helpers/app.ts';
import { type DnsServer, startDnsServer } from '../helpers/dns-server.ts';
import { createVerifiedDomain } from '../helpers/domains.ts';
import { apiClient } from '../helpers/http.ts';
import { freePort } from '../helpers/ports.ts';
import { createInstallation, type ServerProcess, startServerProcess } from '../helpers/process.ts';
import { sendMail } from '../helpers/smtp.ts';
import { createAddress } from '../smtp/mail-setup.ts';

const API_KEY = 'mr_test_postgres_url_options_0123456789';
/** Set through the URL's `options`, so that the server's connections show whether those options reached them. */
const APPLICATION = `mailroom_options_${randomBytes(4).toString('hex')}`;

let dns: DnsServer | undefined;
let installation: Awaited<ReturnType<typeof createInstallation>> | undefined;
let server: ServerProcess | undefined;
let observer: pg.Client | undefined;

after(async () => {
  await server?.stop('SIGKILL');
  await observer?.end();
  await installation?.remove();
  await dns?.close();
});

test('settings in the DATABASE_URL options apply, and the tables are still in DATABASE_SCHEMA', {
  skip: !TEST_DATABASE_URL,
}, async () => {
  dns = await startDnsServer();
  const smtpPort = await freePort();
  const url = new URL(TEST_DATABASE_URL!);
  url.searchParams.set('options', `-c application_name=${APPLICATION}`);
  installation = await createInstallation({
    DNS_SERVERS: dns.address,
    SMTP_PORT: String(smtpPort),
    MAILROOM_API_KEY: API_KEY,
    DATABASE_URL: url.toString(),
  });
  const schema = installation.env.DATABASE_SCHEMA!;
  server = await startServerProcess(installation.env);
  const api = apiClient(server.httpUrl, API_KEY);
  const domain = await createVerifiedDomain(api, dns, 'options.test');
  await createAddress(api, 'inbox@options.test', domain.id);
  const sent = await sendMail({
    port: smtpPort,
    to: 'inbox@options.test',
    raw: 'From: a@sender.test\r\nTo: inbox@options.test\r\nSubject: Options\r\n\r\nBody\r\n',
  });
  assert.equal(sent.code, 250);

  observer = new pg.Client({ connectionString: TEST_DATABASE_URL });
  await observer.connect();
  const { rows: connections } = await observer.query<{ count: number }>(
    'select count(*)::int as count from pg_stat_activity where application_name = $1',
    [APPLICATION],
  );
  assert.ok(connections[0]!.count > 0, 'the server connected with the options of its DATABASE_URL');
  const { rows: stored } = await observer.query<{ subject: string }>(`select subject from "${schema}".emails`);
  assert.deepEqual(stored, [{ subject: 'Options' }]);
});
