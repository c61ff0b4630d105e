import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import pg from 'pg';
import { TEST_DATABASE_URL } from '../helpers/app.ts';
import { type DnsServer, startDnsServer } from '../helpers/dns-server.ts';
import { apiClient } from '../helpers/http.ts';
import { createInstallation, runCli, startServerProcess } from '../helpers/process.ts';

let dns: DnsServer;
before(async () => {
  dns = await startDnsServer();
});
after(() => dns.close());

describe('npm start', () => {
  test('on an empty data directory it prints an API key that can manage domains on both families', async () => {
    const installation = await createInstallation({ DNS_SERVERS: dns.address });
    const server = await startServerProcess(installation.env);
    try {
      const key = server.stdout().match(/^\s+(mr_[A-Za-z0-9]{40})$/m)?.[1];
      assert.ok(key, server.stdout());
      assert.match(server.stdout(), /Make more keys with: npx mailroom keys create \[--account NAME\]/);
      const api = apiClient(server.httpUrl, key);
      for (const family of ['e2', 'v2']) {
        const created = await api.post(`/api/${family}/domains`, { domain: `start-${family}.test` });
        assert.equal(created.status, 201);
        const list = await api.get(`/api/${family}/domains`);
        assert.ok(list.body.data.some((d: { id: string }) => d.id === created.body.id));
        const checked = await api.get(`/api/${family}/domains/${created.body.id}?check=true`);
        assert.equal(checked.body.verificationCheck.isFullyVerified, false);
        assert.equal((await api.delete(`/api/${family}/domains/${created.body.id}`)).status, 200);
      }
      assert.equal(await server.stop('SIGTERM'), 0);
    } finally {
      server.child.kill('SIGKILL');
      await installation.remove();
    }
  });

  test('a second start does not print another key', async () => {
    const installation = await createInstallation();
    try {
      const first = await startServerProcess(installation.env);
      assert.match(first.stdout(), /mr_/);
      assert.equal(await first.stop('SIGINT'), 0);
      const second = await startServerProcess(installation.env);
      assert.doesNotMatch(second.stdout(), /mr_/);
      assert.equal(await second.stop(), 0);
    } finally {
      await installation.remove();
    }
  });

  test('MAILROOM_API_KEY becomes the key of the default account and nothing is printed', async () => {
    const installation = await createInstallation({ MAILROOM_API_KEY: 'mr_configured_key_0123456789' });
    try {
      const server = await startServerProcess(installation.env);
      assert.doesNotMatch(server.stdout(), /Created account/);
      const response = await apiClient(server.httpUrl, 'mr_configured_key_0123456789').get('/api/v2/domains');
      assert.equal(response.status, 200);
      await server.stop();
    } finally {
      await installation.remove();
    }
  });
});

describe('mailroom CLI', () => {
  test('keys create prints a working key for a new account, and set-limit caps its domains', async () => {
    const installation = await createInstallation({
      DNS_SERVERS: dns.address,
      MAILROOM_API_KEY: 'mr_admin_key_0123456789',
    });
    const server = await startServerProcess(installation.env);
    try {
      const created = await runCli(['keys', 'create', '--account', 'acme'], installation.env);
      assert.equal(created.code, 0, created.stderr);
      const key = created.stdout.trim();
      assert.match(key, /^mr_[A-Za-z0-9]{40}$/);
      assert.equal(created.stderr, 'New API key for account "acme". It is shown only once.\n');

      const limit = await runCli(['accounts', 'set-limit', 'acme', '1'], installation.env);
      assert.equal(limit.code, 0, limit.stderr);
      assert.equal(limit.stdout, 'Account "acme" domain limit: 1\n');

      const acme = apiClient(server.httpUrl, key);
      assert.equal((await acme.post('/api/v2/domains', { domain: 'acme-one.test' })).status, 201);
      for (const family of ['e2', 'v2']) {
        const refused = await acme.post(`/api/${family}/domains`, { domain: 'acme-two.test' });
        assert.equal(refused.status, 403);
        assert.deepEqual(refused.body, {
          error: 'Domain limit reached. Please upgrade your plan to add more domains.',
        });
      }
      const admin = apiClient(server.httpUrl, 'mr_admin_key_0123456789');
      assert.deepEqual((await admin.get('/api/v2/domains')).body.data, [], 'accounts are isolated');

      const unlimited = await runCli(['accounts', 'set-limit', 'acme', 'unlimited'], installation.env);
      assert.equal(unlimited.stdout, 'Account "acme" domain limit: unlimited\n');
      assert.equal((await acme.post('/api/v2/domains', { domain: 'acme-two.test' })).status, 201);
    } finally {
      await server.stop();
      await installation.remove();
    }
  });

  test('set-limit on an unknown account and bad limits fail with a message', async () => {
    const installation = await createInstallation();
    try {
      assert.equal((await runCli(['migrate', '--create'], installation.env)).code, 0);
      const unknown = await runCli(['accounts', 'set-limit', 'ghost', '3'], installation.env);
      assert.equal(unknown.code, 1);
      assert.equal(unknown.stderr, 'No account named ghost\n');
      await runCli(['keys', 'create'], installation.env);
      for (const limit of ['-2', '0x10', '', '1.5']) {
        const bad = await runCli(['accounts', 'set-limit', 'default', limit], installation.env);
        assert.equal(bad.code, 1, limit);
        assert.equal(bad.stderr, 'The domain limit is a whole number of at least 0, or "unlimited"\n');
      }
      const unknownOption = await runCli(['keys', 'list', '--bogus'], installation.env);
      assert.equal(unknownOption.code, 2);
      assert.match(unknownOption.stderr, /^Unknown option '--bogus'\n\nUsage: mailroom <command>/);
      const help = await runCli(['--help'], installation.env);
      assert.equal(help.code, 0);
      assert.match(help.stdout, /^Usage: mailroom <command>/);
    } finally {
      await installation.remove();
    }
  });

  test('keys and accounts commands refuse an installation that does not exist, and create none', async () => {
    const installation = await createInstallation();
    try {
      const { DATA_DIR, DATABASE_SCHEMA } = installation.env;
      const where = DATABASE_SCHEMA ? `PostgreSQL schema ${DATABASE_SCHEMA}` : `DATA_DIR ${DATA_DIR}`;
      for (const command of [
        ['keys', 'list'],
        ['keys', 'create'],
        ['accounts', 'set-limit', 'default', '1'],
      ]) {
        const refused = await runCli(command, installation.env);
        assert.equal(refused.code, 1, command.join(' '));
        assert.equal(refused.stderr, `No Mailroom installation in ${where}: run the CLI with the server's settings\n`);
        assert.equal(refused.stdout, '');
      }
      // Nothing was migrated by them: the first migrate applies everything.
      const migrated = await runCli(['migrate', '--create'], installation.env);
      assert.match(migrated.stdout, /^Applied: 0001_foundation, 0002_mail/);
    } finally {
      await installation.remove();
    }
  });

  test('migrate refuses a DATA_DIR that does not exist and makes none; --create makes it; npm start makes ./data', {
    skip: TEST_DATABASE_URL ? 'SQLite only: DATA_DIR holds the database' : false,
  }, async () => {
    const installation = await createInstallation();
    try {
      // A mistyped DATA_DIR: migrate used to make it, with a new empty installation the server never reads.
      const missing = join(installation.dataDir, 'mailroom-dta');
      const refused = await runCli(['migrate'], { ...installation.env, DATA_DIR: missing });
      assert.equal(refused.code, 1);
      assert.equal(
        refused.stderr,
        `DATA_DIR ${missing} does not exist: check DATA_DIR, or run "mailroom migrate --create" to make a new ` +
          'installation there (npm start makes it too)\n',
      );
      assert.equal(refused.stdout, '');
      assert.equal(existsSync(missing), false);

      const created = await runCli(['migrate', '--create'], {
        ...installation.env,
        DATA_DIR: missing,
      });
      assert.equal(created.code, 0, created.stderr);
      assert.match(created.stdout, /^Applied: 0001_foundation, 0002_mail/);
      assert.equal(existsSync(join(missing, 'mailroom.sqlite')), true);

      // A fresh machine: npm start with no DATA_DIR makes ./data in the folder it runs in.
      const { DATA_DIR: _unset, ...fresh } = installation.env;
      const server = await startServerProcess(fresh, 20_000, { cwd: installation.dataDir });
      assert.equal(await server.stop(), 0);
      assert.equal(existsSync(join(installation.dataDir, 'data', 'mailroom.sqlite')), true);
    } finally {
      await installation.remove();
    }
  });

  test('migrate refuses a DATABASE_SCHEMA that does not exist and makes none; --create makes it; keys commands make none', {
    skip: TEST_DATABASE_URL ? false : 'PostgreSQL only: a schema holds the installation',
  }, async () => {
    const installation = await createInstallation();
    const schemaExists = async () => {
      const client = new pg.Client({ connectionString: TEST_DATABASE_URL });
      await client.connect();
      try {
        const found = await client.query('select 1 from pg_namespace where nspname = $1', [schema]);
        return found.rowCount === 1;
      } finally {
        await client.end();
      }
    };
    const schema = installation.env.DATABASE_SCHEMA!;
    try {
      const listed = await runCli(['keys', 'list'], installation.env);
      assert.equal(listed.code, 1);
      assert.equal(
        listed.stderr,
        `No Mailroom installation in PostgreSQL schema ${schema}: run the CLI with the server's settings\n`,
      );
      const refused = await runCli(['migrate'], installation.env);
      assert.equal(refused.code, 1);
      assert.equal(
        refused.stderr,
        `PostgreSQL schema ${schema} does not exist: check DATABASE_SCHEMA, or run "mailroom migrate --create" to make ` +
          'a new installation there (npm start makes it too)\n',
      );
      assert.equal(refused.stdout, '');
      assert.equal(await schemaExists(), false, 'neither command made the schema');

      const created = await runCli(['migrate', '--create'], installation.env);
      assert.equal(created.code, 0, created.stderr);
      assert.match(created.stdout, /^Applied: 0001_foundation, 0002_mail/);
      assert.equal(await schemaExists(), true);
      assert.equal((await runCli(['migrate'], installation.env)).stdout, 'Database is up to date\n');
    } finally {
      await installation.remove();
    }
  });

  test('migrate reports an up-to-date database the second time', async () => {
    const installation = await createInstallation();
    try {
      const first = await runCli(['migrate', '--create'], installation.env);
      assert.equal(first.code, 0, first.stderr);
      assert.match(first.stdout, /^Applied: 0001_foundation, 0002_mail/);
      const second = await runCli(['migrate'], installation.env);
      assert.equal(second.stdout, 'Database is up to date\n');
    } finally {
      await installation.remove();
    }
  });

  test('a database that refuses the connection is one line and exit 1, without a stack trace', async () => {
    const env = {
      PATH: process.env.PATH ?? '',
      DATABASE_URL: 'postgres://postgres@127.0.0.1:9/test',
      DATABASE_SCHEMA: 'mailroom',
    };
    for (const command of [['migrate'], ['keys', 'list'], ['accounts', 'set-limit', 'default', '1']]) {
      const result = await runCli(command, env);
      assert.equal(result.code, 1, command.join(' '));
      assert.equal(result.stderr, `mailroom ${command[0]}: connect ECONNREFUSED 127.0.0.1:9\n`);
      assert.equal(result.stdout, '');
    }
  });

  test('an unknown command prints usage and exits 2', async () => {
    const result = await runCli(['frobnicate'], { PATH: process.env.PATH ?? '' });
    assert.equal(result.code, 2);
    assert.match(result.stderr, /^Usage: mailroom <command>/);
  });
});
