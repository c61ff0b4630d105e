import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { apiClient } from '../helpers/http.ts';
import { createInstallation, logEntry, runCli, startServerProcess } from '../helpers/process.ts';

const ADMIN_KEY = 'mr_admin_key_0123456789';
const UNKNOWN_KEY = { error: 'Unauthorized', detail: 'Unknown or revoked API key' };
const HEADER = ['ID', 'PREFIX', 'ACCOUNT', 'CREATED', 'LAST USED', 'REVOKED'];

interface ListedKey {
  id: string;
  prefix: string;
  createdAt: string;
  lastUsedAt: string | null;
  revokedAt: string | null;
}

/** The table `keys list` prints, as cells: columns are separated by at least two spaces. */
function cells(stdout: string): string[][] {
  return stdout
    .trimEnd()
    .split('\n')
    .map((line) => line.split(/ {2,}/));
}

function row(key: ListedKey, account: string): string[] {
  return [key.id, key.prefix, account, key.createdAt, key.lastUsedAt ?? '-', key.revokedAt ?? '-'];
}

describe('mailroom keys', () => {
  test('list, revoke and rotate: a running server refuses a revoked key at once and takes the new one', async () => {
    const installation = await createInstallation({ MAILROOM_API_KEY: ADMIN_KEY, DNS_SERVERS: '127.0.0.1:9' });
    const server = await startServerProcess(installation.env);
    const cli = (...args: string[]) => runCli(['keys', ...args], installation.env);
    try {
      const first = (await cli('create', '--account', 'acme')).stdout.trim();
      const second = (await cli('create', '--account', 'acme')).stdout.trim();
      assert.equal((await apiClient(server.httpUrl, first).get('/api/v2/domains')).status, 200);
      const acmeKeys: ListedKey[] = (await apiClient(server.httpUrl, second).get('/api/v2/keys')).body.data;
      assert.deepEqual(
        acmeKeys.map((k) => k.prefix),
        [first.slice(0, 11), second.slice(0, 11)],
      );

      const listed = await cli('list', '--account', 'acme');
      assert.equal(listed.code, 0, listed.stderr);
      assert.deepEqual(cells(listed.stdout), [HEADER, ...acmeKeys.map((k) => row(k, 'acme'))]);
      const [adminKey]: ListedKey[] = (await apiClient(server.httpUrl, ADMIN_KEY).get('/api/v2/keys')).body.data;
      const all = await cli('list');
      assert.deepEqual(cells(all.stdout), [HEADER, row(adminKey!, 'default'), ...acmeKeys.map((k) => row(k, 'acme'))]);

      const [firstKey, secondKey] = acmeKeys as [ListedKey, ListedKey];
      const revoked = await cli('revoke', firstKey.id);
      assert.equal(revoked.code, 0, revoked.stderr);
      const revokedAt = revoked.stdout.match(/ at (\S+)\n$/)?.[1];
      assert.equal(
        revoked.stdout,
        `Revoked key ${firstKey.id} (${firstKey.prefix}) of account "acme" at ${revokedAt}\n`,
      );
      assert.deepEqual((await apiClient(server.httpUrl, first).get('/api/v2/domains')).body, UNKNOWN_KEY);
      assert.equal(cells((await cli('list', '--account', 'acme')).stdout)[1]![5], revokedAt);

      const lastOne = await cli('revoke', secondKey.id);
      assert.equal(lastOne.code, 1);
      assert.equal(
        lastOne.stderr,
        'Cannot revoke the last active API key of an account: create another key first, or rotate it\n',
      );

      const rotated = await cli('rotate', secondKey.id);
      assert.equal(rotated.code, 0, rotated.stderr);
      const newKey = rotated.stdout.trim();
      assert.match(rotated.stdout, /^mr_[A-Za-z0-9]{40}\n$/);
      const newId = rotated.stderr.match(/^New API key (key_\S+) /)?.[1];
      assert.equal(
        rotated.stderr,
        `New API key ${newId} for account "acme". It is shown only once. ` +
          `Key ${secondKey.id} (${secondKey.prefix}) is revoked.\n`,
      );
      assert.deepEqual((await apiClient(server.httpUrl, second).get('/api/v2/domains')).body, UNKNOWN_KEY);
      const afterRotation = await apiClient(server.httpUrl, newKey).get('/api/v2/keys');
      assert.deepEqual(
        afterRotation.body.data.map((k: ListedKey) => [k.id, k.prefix, k.revokedAt === null]),
        [
          [firstKey.id, firstKey.prefix, false],
          [secondKey.id, secondKey.prefix, false],
          [newId, newKey.slice(0, 11), true],
        ],
      );

      const again = await cli('rotate', secondKey.id);
      assert.equal(again.code, 1);
      assert.equal(again.stderr, `API key ${secondKey.id} is already revoked\n`);
    } finally {
      await server.stop();
      await installation.remove();
    }
  });

  test('a MAILROOM_API_KEY revoked through the API stays revoked at the next start, which warns about it', async () => {
    const installation = await createInstallation({ MAILROOM_API_KEY: ADMIN_KEY, LOG_LEVEL: 'warn' });
    try {
      const first = await startServerProcess(installation.env);
      const admin = apiClient(first.httpUrl, ADMIN_KEY);
      const other = (await admin.post('/api/v2/keys', {})).body.key;
      const keys: ListedKey[] = (await admin.get('/api/v2/keys')).body.data;
      const adminKey = keys.find((key) => ADMIN_KEY.startsWith(key.prefix))!;
      assert.equal((await apiClient(first.httpUrl, other).delete(`/api/v2/keys/${adminKey.id}`)).status, 200);
      assert.equal(await first.stop(), 0);

      const second = await startServerProcess(installation.env);
      try {
        const { revokedAt } = (await apiClient(second.httpUrl, other).get('/api/v2/keys')).body.data.find(
          (key: ListedKey) => key.id === adminKey.id,
        );
        const warning =
          `MAILROOM_API_KEY was revoked at ${revokedAt} and authenticates nothing: ` +
          'unset it, or set an active key of "default"';
        assert.ok(second.stdout().includes(`\nWarning: ${warning}\n`), second.stdout());
        const logged = await logEntry(second, warning);
        assert.deepEqual([logged.level, logged.revokedAt], [40, revokedAt]);
        const refused = await apiClient(second.httpUrl, ADMIN_KEY).get('/api/v2/domains');
        assert.deepEqual([refused.status, refused.body], [401, UNKNOWN_KEY]);
      } finally {
        await second.stop();
      }
    } finally {
      await installation.remove();
    }
  });

  test('revoke or rotate an unknown id, and list an unknown account, fail with a message', async () => {
    const installation = await createInstallation({ MAILROOM_API_KEY: ADMIN_KEY });
    const cli = (...args: string[]) => runCli(['keys', ...args], installation.env);
    try {
      assert.equal((await runCli(['migrate', '--create'], installation.env)).code, 0);
      for (const command of ['revoke', 'rotate']) {
        const unknown = await cli(command, 'key_unknown');
        assert.equal(unknown.code, 1);
        assert.equal(unknown.stderr, 'API key not found\n');
      }
      const ghost = await cli('list', '--account', 'ghost');
      assert.equal(ghost.code, 1);
      assert.equal(ghost.stderr, 'No account named ghost\n');
      const missingId = await cli('revoke');
      assert.equal(missingId.code, 2);
      assert.match(missingId.stderr, /keys revoke ID/);
    } finally {
      await installation.remove();
    }
  });
});
