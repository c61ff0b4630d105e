import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, test } from 'node:test';
import pg from 'pg';
import { TEST_DATABASE_URL } from '../helpers/app.ts';
import { type DnsServer, startDnsServer } from '../helpers/dns-server.ts';
import { createVerifiedDomain } from '../helpers/domains.ts';
import { apiClient } from '../helpers/http.ts';
import { freePort } from '../helpers/ports.ts';
import { createInstallation, runScript, type ServerProcess, startServerProcess } from '../helpers/process.ts';
import { type S3Server, startS3Server } from '../helpers/s3.ts';
import { sendMail } from '../helpers/smtp.ts';
import { createAddress } from '../smtp/mail-setup.ts';

const API_KEY = 'mr_test_postgres_url_options_0123456789';
/** Set through the URL's `options`, so that the server's connections show whether those options reached them. */
const APPLICATION = `mailroom_options_${randomBytes(4).toString('hex')}`;

let dns: DnsServer | undefined;
let s3: S3Server | undefined;
const installations: Array<Awaited<ReturnType<typeof createInstallation>>> = [];
const servers: ServerProcess[] = [];
/** A schema a test created itself, for a search_path to name. */
let searchPathSchema: string | undefined;
let observer: pg.Client | undefined;

after(async () => {
  for (const server of servers) await server.stop('SIGKILL');
  if (searchPathSchema) await observer?.query(`drop schema if exists "${searchPathSchema}" cascade`);
  await observer?.end();
  for (const installation of installations) await installation.remove();
  await dns?.close();
  await s3?.close();
});

async function observe(): Promise<pg.Client> {
  if (!observer) {
    observer = new pg.Client({ connectionString: TEST_DATABASE_URL });
    await observer.connect();
  }
  return observer;
}

/** TEST_DATABASE_URL with `options` set to `settings`. */
function urlWithOptions(settings: string): string {
  const url = new URL(TEST_DATABASE_URL!);
  url.searchParams.set('options', settings);
  return url.toString();
}

const message = (to: string, subject: string) =>
  `From: a@sender.test\r\nTo: ${to}\r\nSubject: ${subject}\r\n\r\nBody\r\n`;

test('settings in the DATABASE_URL options apply, and the tables are still in DATABASE_SCHEMA', {
  skip: !TEST_DATABASE_URL,
}, async () => {
  dns ??= await startDnsServer();
  const smtpPort = await freePort();
  const installation = await createInstallation({
    DNS_SERVERS: dns.address,
    SMTP_PORT: String(smtpPort),
    MAILROOM_API_KEY: API_KEY,
    DATABASE_URL: urlWithOptions(`-c application_name=${APPLICATION}`),
  });
  installations.push(installation);
  const schema = installation.env.DATABASE_SCHEMA!;
  const server = await startServerProcess(installation.env);
  servers.push(server);
  const api = apiClient(server.httpUrl, API_KEY);
  const domain = await createVerifiedDomain(api, dns, 'options.test');
  await createAddress(api, 'inbox@options.test', domain.id);
  const sent = await sendMail({
    port: smtpPort,
    to: 'inbox@options.test',
    raw: message('inbox@options.test', 'Options'),
  });
  assert.equal(sent.code, 250);

  const observer = await observe();
  const { rows: connections } = await observer.query<{ count: number }>(
    'select count(*)::int as count from pg_stat_activity where application_name = $1',
    [APPLICATION],
  );
  assert.ok(connections[0]!.count > 0, 'the server connected with the options of its DATABASE_URL');
  const { rows: stored } = await observer.query<{ subject: string }>(`select subject from "${schema}".emails`);
  assert.deepEqual(stored, [{ subject: 'Options' }]);
});

test('without DATABASE_SCHEMA, processes in the schema their search_path names hear each other', {
  skip: !TEST_DATABASE_URL,
}, async () => {
  dns ??= await startDnsServer();
  searchPathSchema = `o_${randomBytes(6).toString('hex')}`;
  await (await observe()).query(`create schema "${searchPathSchema}"`);
  // Two processes on one installation share an S3 blob store, as each DATA_DIR takes one process.
  s3 ??= await startS3Server();
  const installation = await createInstallation({
    ...s3.env,
    DNS_SERVERS: dns.address,
    MAILROOM_API_KEY: API_KEY,
    DATABASE_URL: urlWithOptions(`-c search_path=${searchPathSchema}`),
  });
  installations.push(installation);
  const { DATABASE_SCHEMA: _, ...env } = installation.env;
  const ports = [await freePort(), await freePort()];
  for (const port of ports) servers.push(await startServerProcess({ ...env, SMTP_PORT: String(port) }));
  const [first] = servers.slice(-2);
  assert.match(first!.stdout(), new RegExp(`^ {2}Database {2}PostgreSQL .* schema ${searchPathSchema}$`, 'm'));
  const api = apiClient(first!.httpUrl, API_KEY);
  const domain = await createVerifiedDomain(api, dns, 'paths.test');
  const id = await createAddress(api, 'inbox@paths.test', domain.id);
  const send = () => sendMail({ port: ports[1]!, to: 'inbox@paths.test', raw: message('inbox@paths.test', 'Paths') });
  // The second process routes the address, and keeps that decision until it hears of a change.
  assert.equal((await send()).code, 250);

  assert.equal((await api.put(`/api/v2/email-addresses/${id}`, { isActive: false })).status, 200);
  const deadline = Date.now() + 5_000;
  let last = await send();
  while (last.code === 250 && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 50));
    last = await send();
  }
  assert.deepEqual([last.code, last.rejected], [550, ['inbox@paths.test']]);
  const { rows } = await (await observe()).query(`select count(*)::int as count from "${searchPathSchema}".emails`);
  assert.ok(rows[0].count >= 1, 'the installation is in the schema its search_path names');
});

/** `src/main.ts` started with DATABASE_URL's search_path set to `schema` and no DATABASE_SCHEMA. */
async function startWithSearchPath(schema: string) {
  const installation = await createInstallation({ DATABASE_URL: urlWithOptions(`-c search_path=${schema}`) });
  installations.push(installation);
  const { DATABASE_SCHEMA: _, ...env } = installation.env;
  return runScript('src/main.ts', [], env);
}

test('a start whose search_path names no existing schema fails and says what to set, without a stack trace', {
  skip: !TEST_DATABASE_URL,
}, async () => {
  const result = await startWithSearchPath(`missing_${randomBytes(6).toString('hex')}`);
  assert.equal(result.code, 1);
  assert.equal(
    result.stderr,
    'Invalid configuration: PostgreSQL has no schema to create tables in: set DATABASE_SCHEMA, or a search_path ' +
      'that names one\n',
  );
  assert.equal(result.stdout, '');
});

test('a start in a schema whose name is too long for its NOTIFY channels fails and says so, without a stack trace', {
  skip: !TEST_DATABASE_URL,
}, async () => {
  const schema = `l_${randomBytes(21).toString('hex')}`;
  const observer = await observe();
  await observer.query(`create schema "${schema}"`);
  try {
    const result = await startWithSearchPath(schema);
    assert.equal(result.code, 1);
    assert.equal(
      result.stderr,
      `Invalid configuration: PostgreSQL schema "${schema}" has a name longer than 43 bytes: use a shorter one\n`,
    );
    assert.equal(result.stdout, '');
  } finally {
    await observer.query(`drop schema "${schema}" cascade`);
  }
});

test('a role that owns its schema but may not create schemas in the database starts and stores mail', {
  skip: !TEST_DATABASE_URL,
}, async () => {
  dns ??= await startDnsServer();
  const role = `r_${randomBytes(6).toString('hex')}`;
  const observer = await observe();
  await observer.query(`create role "${role}" login`);
  await observer.query(`create schema "${role}" authorization "${role}"`);
  try {
    const url = new URL(TEST_DATABASE_URL!);
    url.username = role;
    const smtpPort = await freePort();
    const installation = await createInstallation({
      DNS_SERVERS: dns.address,
      SMTP_PORT: String(smtpPort),
      MAILROOM_API_KEY: API_KEY,
      DATABASE_URL: url.toString(),
      DATABASE_SCHEMA: role,
    });
    installations.push(installation);
    const server = await startServerProcess(installation.env);
    servers.push(server);
    const api = apiClient(server.httpUrl, API_KEY);
    const domain = await createVerifiedDomain(api, dns, 'owner.test');
    await createAddress(api, 'inbox@owner.test', domain.id);
    const sent = await sendMail({ port: smtpPort, to: 'inbox@owner.test', raw: message('inbox@owner.test', 'Owner') });
    assert.equal(sent.code, 250);
    const { rows } = await observer.query<{ subject: string }>(`select subject from "${role}".emails`);
    assert.deepEqual(rows, [{ subject: 'Owner' }]);
    await server.stop('SIGKILL');
  } finally {
    await observer.query(`drop schema "${role}" cascade`);
    await observer.query(`drop role "${role}"`);
  }
});
