import assert from 'node:assert/strict';
import { once } from 'node:events';
import { connect, type Socket } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { startTestApp, type TestApp } from '../helpers/app.ts';

/** A raw client connection that records everything the server sends and when the server closes it. */
async function openConnection(baseUrl: string) {
  const { hostname, port } = new URL(baseUrl);
  const socket: Socket = connect(Number(port), hostname);
  let received = '';
  socket.setEncoding('utf8');
  socket.on('data', (chunk: string) => {
    received += chunk;
  });
  socket.on('error', () => {});
  // Not events.once: it rejects on 'error', and a byte written after the server's close draws a reset.
  const closed = new Promise<string>((resolve) => socket.on('close', () => resolve(received)));
  await once(socket, 'connect');
  return {
    socket,
    received: () => received,
    /** Resolves with everything received once the connection is closed. */
    closed,
    isClosed: () => socket.destroyed,
    /** Sends one complete keep-alive request and waits for its whole answer. */
    async roundTrip(path: string) {
      const before = received.length;
      socket.write(`GET ${path} HTTP/1.1\r\nHost: x\r\n\r\n`);
      while (!/\r\n\r\n[\s\S]*\}$/.test(received.slice(before)) && !socket.destroyed) await once(socket, 'data');
      return received.slice(before);
    },
  };
}

/**
 * Writes `text` a byte at a time, pausing between bytes, until the server closes the connection; resolves with
 * everything received then. Fails if all of `text` was sent without the server closing.
 */
async function trickleUntilClosed(connection: Awaited<ReturnType<typeof openConnection>>, text: string) {
  for (const byte of text) {
    // Once the 408 is in, another byte would only draw a reset that can discard unread data.
    if (connection.isClosed() || connection.received().startsWith('HTTP/1.1 408')) return connection.closed;
    connection.socket.write(byte);
    await sleep(250);
  }
  connection.socket.destroy();
  assert.fail('the server kept the connection open until the whole request had trickled in');
}

describe('slow clients', () => {
  let server: TestApp;
  before(async () => {
    server = await startTestApp({ HTTP_REQUEST_TIMEOUT_SECONDS: '1', HTTP_KEEP_ALIVE_TIMEOUT_SECONDS: '1' });
  });
  after(() => server.close());

  const timeoutAnswer =
    'HTTP/1.1 408 Request Timeout\r\nContent-Type: application/json\r\nContent-Length: 43\r\nConnection: close\r\n\r\n' +
    '{"error":"Request took too long to arrive"}';
  const body = JSON.stringify({ domain: 'slow.example.test' }).repeat(2);
  const postHead = (authorization: string) =>
    `POST /api/v2/domains HTTP/1.1\r\nHost: x\r\n${authorization}Content-Type: application/json\r\n` +
    `Content-Length: ${body.length}\r\n\r\n`;

  test('a body trickling in past the request timeout is answered 408 and the connection closed', async () => {
    const connection = await openConnection(server.baseUrl);
    connection.socket.write(postHead(`Authorization: Bearer ${server.apiKey}\r\n`));
    assert.equal(await trickleUntilClosed(connection, body), timeoutAnswer);
  });

  test('without a key, the 401 is sent at once and the connection closed when the body is still trickling in', async () => {
    const connection = await openConnection(server.baseUrl);
    connection.socket.write(postHead(''));
    const received = await trickleUntilClosed(connection, body);
    assert.match(received, /^HTTP\/1\.1 401 Unauthorized\r\n/);
    assert.ok(
      received.endsWith(
        '\r\n\r\n{"error":"Unauthorized","detail":"Missing Authorization header: send Authorization: Bearer <key>"}',
      ),
      received,
    );
  });

  test('headers trickling in past the request timeout are answered 408 and the connection closed', async () => {
    const connection = await openConnection(server.baseUrl);
    const head = `GET /api/v2/domains HTTP/1.1\r\nHost: x\r\nX-Slow: ${'s'.repeat(60)}\r\n\r\n`;
    assert.equal(await trickleUntilClosed(connection, head), timeoutAnswer);
  });

  test('an idle keep-alive connection is closed after the keep-alive timeout', async () => {
    const connection = await openConnection(server.baseUrl);
    assert.match(await connection.roundTrip('/healthz'), /^HTTP\/1\.1 200 OK\r\n/);
    await connection.closed;
    assert.equal(connection.isClosed(), true);
  });
});

describe('requests Node refuses before routing', () => {
  let server: TestApp;
  before(async () => {
    server = await startTestApp();
  });
  after(() => server.close());

  test('headers over 16 KiB are answered 431 { error } and the connection closed', async () => {
    const connection = await openConnection(server.baseUrl);
    connection.socket.write(`GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: ${'b'.repeat(17 * 1024)}\r\n\r\n`);
    assert.equal(
      await connection.closed,
      'HTTP/1.1 431 Request Header Fields Too Large\r\nContent-Type: application/json\r\nContent-Length: 41\r\n' +
        'Connection: close\r\n\r\n{"error":"Request headers are too large"}',
    );
  });

  test('a malformed request line is answered 400 { error } and the connection closed', async () => {
    const connection = await openConnection(server.baseUrl);
    connection.socket.write('GET /healthz HTTP/9\r\n\r\n');
    assert.equal(
      await connection.closed,
      'HTTP/1.1 400 Bad Request\r\nContent-Type: application/json\r\nContent-Length: 34\r\n' +
        'Connection: close\r\n\r\n{"error":"Malformed HTTP request"}',
    );
  });
});

describe('connection cap', () => {
  let server: TestApp;
  before(async () => {
    server = await startTestApp({ HTTP_MAX_CONNECTIONS: '2' });
  });
  after(() => server.close());

  test('connections up to HTTP_MAX_CONNECTIONS are served; one more is closed at once, unanswered', async () => {
    const first = await openConnection(server.baseUrl);
    const second = await openConnection(server.baseUrl);
    try {
      assert.match(await first.roundTrip('/healthz'), /^HTTP\/1\.1 200 OK\r\n/);
      assert.match(await second.roundTrip('/healthz'), /^HTTP\/1\.1 200 OK\r\n/);
      const third = await openConnection(server.baseUrl);
      third.socket.write('GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n');
      assert.equal(await third.closed, '');
      assert.match(await first.roundTrip('/healthz'), /^HTTP\/1\.1 200 OK\r\n/);
    } finally {
      first.socket.destroy();
      second.socket.destroy();
    }
  });
});

test("HTTP_REQUEST_TIMEOUT_SECONDS above Node's 300 s default starts and serves", async () => {
  const server = await startTestApp({ HTTP_REQUEST_TIMEOUT_SECONDS: '600' });
  try {
    assert.equal((await fetch(`${server.baseUrl}/healthz`)).status, 200);
  } finally {
    await server.close();
  }
});

describe('the METRICS_PORT listener, held to the same limits', () => {
  let server: TestApp;
  before(async () => {
    server = await startTestApp({ METRICS_PORT: '0', HTTP_REQUEST_TIMEOUT_SECONDS: '1', HTTP_MAX_CONNECTIONS: '2' });
  });
  after(() => server.close());

  test('headers trickling in past the request timeout are answered 408 and the connection closed', async () => {
    const connection = await openConnection(server.metricsUrl!);
    const head = `GET /metrics HTTP/1.1\r\nHost: x\r\nX-Slow: ${'s'.repeat(60)}\r\n\r\n`;
    assert.equal(
      await trickleUntilClosed(connection, head),
      'HTTP/1.1 408 Request Timeout\r\nContent-Type: application/json\r\nContent-Length: 43\r\n' +
        'Connection: close\r\n\r\n{"error":"Request took too long to arrive"}',
    );
  });

  test('connections up to HTTP_MAX_CONNECTIONS are served; one more is closed at once, unanswered', async () => {
    const first = await openConnection(server.metricsUrl!);
    const second = await openConnection(server.metricsUrl!);
    try {
      // The listener serves /metrics only: another path is a JSON 404, a complete answer to wait for.
      assert.match(await first.roundTrip('/healthz'), /^HTTP\/1\.1 404 Not Found\r\n/);
      assert.match(await second.roundTrip('/healthz'), /^HTTP\/1\.1 404 Not Found\r\n/);
      const third = await openConnection(server.metricsUrl!);
      third.socket.write('GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n');
      assert.equal(await third.closed, '');
    } finally {
      first.socket.destroy();
      second.socket.destroy();
    }
  });
});
