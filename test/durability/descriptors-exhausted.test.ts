import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { once } from 'node:events';
import { connect, type Socket } from 'node:net';
import { after, before, test } from 'node:test';
import { type MailroomProcess, startMailroom } from '../delivery/processes.ts';
import { type DnsServer, startDnsServer } from '../helpers/dns-server.ts';
import { createVerifiedDomain } from '../helpers/domains.ts';
import { createInstallation } from '../helpers/process.ts';
import { sendMail } from '../helpers/smtp.ts';
import { hasPrlimit } from '../helpers/system-tools.ts';
import { createAddress } from '../smtp/mail-setup.ts';

const API_KEY = 'mr_test_descriptors_0123456789abcd';
const ADDRESS = 'inbox@descriptors.test';

let dns: DnsServer;
let installation: Awaited<ReturnType<typeof createInstallation>>;
let server: MailroomProcess;

before(async () => {
  if (!hasPrlimit) return;
  dns = await startDnsServer();
  installation = await createInstallation({ MAILROOM_API_KEY: API_KEY, DNS_SERVERS: dns.address });
  server = await startMailroom(installation.env, API_KEY);
  const domain = await createVerifiedDomain(server.api, dns, 'descriptors.test');
  await createAddress(server.api, ADDRESS, domain.id);
});
after(async () => {
  await server?.stop('SIGKILL');
  await installation?.remove();
  await dns?.close();
});

/** The server's limit of open files as it started, restored by `limitDescriptors('none')`. */
let startLimit: string | undefined;

/** Sets the server's limit of open files so that every new open file or socket fails with EMFILE, or restores it. */
function limitDescriptors(limit: 'none' | 'exhausted') {
  const pid = server.child.pid!;
  startLimit ??= execFileSync('prlimit', [`--pid=${pid}`, '--nofile', '--output=SOFT', '--noheadings'])
    .toString()
    .trim();
  // The limit bounds the number a new descriptor takes, and 0 bounds them all: the open ones stay open, and one of
  // them closing meanwhile (an idle database connection, a finished SMTP session) frees nothing a read could take.
  const soft = limit === 'exhausted' ? 0 : startLimit;
  execFileSync('prlimit', [`--pid=${pid}`, `--nofile=${soft}:`]);
}

/** One keep-alive connection, opened while descriptors are free, for requests made once they are not. */
async function keptConnection(baseUrl: string) {
  const socket: Socket = connect(Number(new URL(baseUrl).port), '127.0.0.1');
  await once(socket, 'connect');
  let received = Buffer.alloc(0);
  socket.on('data', (chunk: Buffer) => {
    received = Buffer.concat([received, chunk]);
  });
  return {
    /** GETs `path` and resolves with the status, Retry-After and body of the answer (sent with Content-Length). */
    async get(path: string) {
      received = Buffer.alloc(0);
      socket.write(`GET ${path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${API_KEY}\r\n\r\n`);
      for (;;) {
        const end = received.indexOf('\r\n\r\n');
        const head = end < 0 ? '' : received.subarray(0, end).toString();
        const length = /\r\ncontent-length: (\d+)/i.exec(head)?.[1];
        if (length !== undefined && received.length >= end + 4 + Number(length)) {
          return {
            status: Number(head.slice(9, 12)),
            retryAfter: /\r\nretry-after: (\d+)/i.exec(head)?.[1] ?? null,
            body: received.subarray(end + 4).toString(),
          };
        }
        assert.ok(!socket.destroyed, `the connection closed before the answer to ${path}`);
        await once(socket, 'data');
      }
    },
    close: () => socket.destroy(),
  };
}

test('out of file descriptors: stored mail and its attachments answer 503 with Retry-After, not a 404 that says the content is lost; reads come back once descriptors free up', {
  skip: !hasPrlimit && 'needs prlimit',
}, async () => {
  const sent = await sendMail({
    port: server.smtpPort,
    to: ADDRESS,
    subject: 'Kept',
    attachments: [{ filename: 'notes.txt', content: 'notes\n' }],
  });
  assert.equal(sent.code, 250, sent.response);
  const emailId = sent.queuedIds[0]!;
  const connection = await keptConnection(server.httpUrl);
  const paths = [`/api/v2/mail/${emailId}/raw`, `/api/v2/attachments/${emailId}/parts/0`];
  try {
    for (const path of paths) {
      limitDescriptors('exhausted');
      assert.deepEqual(
        await connection.get(path),
        {
          status: 503,
          retryAfter: '5',
          body: JSON.stringify({ error: 'Service temporarily unavailable, try again shortly' }),
        },
        path,
      );
    }
    limitDescriptors('exhausted');
    const detail = await connection.get(`/api/v2/mail/${emailId}`);
    assert.equal(detail.status, 200, detail.body);
    assert.deepEqual(JSON.parse(detail.body).processing.s3Info.error, 'Storage unavailable, try again shortly');
  } finally {
    limitDescriptors('none');
  }
  const attachment = await connection.get(paths[1]!);
  assert.deepEqual([attachment.status, attachment.body], [200, 'notes\n']);
  connection.close();
  const again = await sendMail({ port: server.smtpPort, to: ADDRESS, subject: 'After' });
  assert.equal(again.code, 250, again.response);
  const logged = server
    .stdout()
    .split('\n')
    .filter((line) => line.startsWith('{') && JSON.parse(line).level >= 50);
  assert.deepEqual(logged, []);
});
