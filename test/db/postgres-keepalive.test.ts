import assert from 'node:assert/strict';
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { after, test } from 'node:test';
import { setTimeout as delay } from 'node:timers/promises';
import { TEST_DATABASE_URL } from '../helpers/app.ts';
import { apiClient } from '../helpers/http.ts';
import { createInstallation, type ServerProcess, startServerProcess } from '../helpers/process.ts';

const API_KEY = 'mr_test_postgres_keepalive_0123456789abcdef';
/** The kernel states a socket's timers in clock ticks of USER_HZ, 100 a second on Linux. */
const TICKS_PER_SECOND = 100;

let installation: Awaited<ReturnType<typeof createInstallation>> | undefined;
let server: ServerProcess | undefined;

after(async () => {
  await server?.stop('SIGKILL');
  await installation?.remove();
});

/** The established TCP connections of process `pid` to `port`, with the timer the kernel runs on each. */
function connectionsTo(pid: number, port: number) {
  const inodes = new Set<string>();
  for (const fd of readdirSync(`/proc/${pid}/fd`)) {
    const target = (() => {
      try {
        return readlinkSync(`/proc/${pid}/fd/${fd}`);
      } catch {
        return '';
      }
    })();
    const inode = /^socket:\[(\d+)\]$/.exec(target)?.[1];
    if (inode) inodes.add(inode);
  }
  const remotePort = port.toString(16).toUpperCase().padStart(4, '0');
  return ['/proc/net/tcp', '/proc/net/tcp6']
    .flatMap((table) => readFileSync(table, 'utf8').trim().split('\n').slice(1))
    .map((line) => line.trim().split(/\s+/))
    .filter((fields) => fields[2]!.endsWith(`:${remotePort}`) && fields[3] === '01' && inodes.has(fields[9]!))
    .map((fields) => {
      const [timer, when] = fields[5]!.split(':');
      return { local: fields[1]!, timer: Number(timer), seconds: Number.parseInt(when!, 16) / TICKS_PER_SECOND };
    });
}

test('every connection to PostgreSQL probes a silent server within 10 s (keep-alive), idle or not', {
  skip: TEST_DATABASE_URL ? false : 'needs TEST_DATABASE_URL (PostgreSQL)',
}, async () => {
  installation = await createInstallation({ MAILROOM_API_KEY: API_KEY });
  server = await startServerProcess(installation.env);
  const api = apiClient(server.httpUrl, API_KEY);
  assert.equal((await api.get('/api/v2/domains')).status, 200);
  await delay(200);

  const connections = connectionsTo(server.child.pid!, Number(new URL(TEST_DATABASE_URL!).port || 5432));
  // The API's pool, ingest's writer and the NOTIFY listeners of deliveries, events and routing.
  assert.ok(connections.length >= 5, JSON.stringify(connections));
  for (const connection of connections) {
    // Timer 2 is the keep-alive timer on an idle connection; without keep-alive an idle connection has none (0).
    assert.equal(connection.timer, 2, JSON.stringify(connection));
    assert.ok(connection.seconds <= 10, JSON.stringify(connection));
  }
});
