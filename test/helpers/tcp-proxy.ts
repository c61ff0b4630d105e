import { connect, createServer, type Socket } from 'node:net';

/**
 * A TCP relay on loopback to `target`, for tests of a peer that misbehaves: `stall()` stops relaying in both
 * directions (bytes wait in the sockets, as on a network that drops everything for a while), `resume()` relays them.
 * `cut()` drops every connection and refuses new ones (each is closed as soon as it opens), `hang()` drops them and
 * holds new ones open without a byte either way (a server that stopped answering), until `restore()`. `forget()`
 * plays a NAT or firewall that forgot its idle connections (those where the target spoke last, so no request waits
 * for an answer): nothing is said to either end, the next bytes a client sends on one are answered with a reset,
 * and new connections pass. A connection busy with a request stays, as a NAT keeps a connection in use.
 */
export async function startTcpProxy(target: { host: string; port: number }) {
  const sockets = new Set<Socket>();
  const relayed = new Set<{ client: Socket; upstream: Socket; forgotten: boolean; awaitingAnswer: boolean }>();
  let stalled = false;
  let down: 'cut' | 'hung' | undefined;
  const track = (socket: Socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  };
  const server = createServer((client) => {
    if (down === 'cut') {
      client.on('error', () => {});
      client.destroy();
      return;
    }
    track(client);
    if (down === 'hung') {
      client.on('error', () => {});
      return;
    }
    const upstream = connect(target.port, target.host);
    track(upstream);
    const pair = { client, upstream, forgotten: false, awaitingAnswer: false };
    relayed.add(pair);
    client.on('close', () => relayed.delete(pair));
    for (const socket of [client, upstream]) {
      socket.on('error', () => {
        client.destroy();
        upstream.destroy();
      });
      if (stalled) socket.pause();
    }
    // Relayed by hand rather than piped: a pipe resumes a paused source when its destination drains.
    for (const [from, to] of [
      [client, upstream],
      [upstream, client],
    ] as const) {
      from.on('data', (chunk) => {
        if (pair.forgotten) return;
        pair.awaitingAnswer = from === client;
        to.write(chunk);
      });
      from.on('end', () => {
        if (!pair.forgotten) to.end();
      });
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as { port: number }).port,
    stall() {
      stalled = true;
      for (const socket of sockets) socket.pause();
    },
    resume() {
      stalled = false;
      for (const socket of sockets) socket.resume();
    },
    cut() {
      down = 'cut';
      for (const socket of sockets) socket.destroy();
    },
    hang() {
      down = 'hung';
      for (const socket of sockets) socket.destroy();
    },
    /** Back to relaying; connections held by `hang()` are dropped. */
    restore() {
      if (down === 'hung') for (const socket of sockets) socket.destroy();
      down = undefined;
    },
    forget() {
      for (const pair of relayed) {
        if (pair.awaitingAnswer) continue;
        relayed.delete(pair);
        pair.forgotten = true;
        pair.upstream.destroy();
        pair.client.on('data', () => pair.client.resetAndDestroy());
      }
    },
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

export type TcpProxy = Awaited<ReturnType<typeof startTcpProxy>>;

/** A relay to the PostgreSQL server `databaseUrl` names, and the URL that reaches that server through it. */
export async function startPostgresProxy(databaseUrl: string): Promise<{ proxy: TcpProxy; url: string }> {
  const database = new URL(databaseUrl);
  const proxy = await startTcpProxy({ host: database.hostname, port: Number(database.port || 5432) });
  database.host = `127.0.0.1:${proxy.port}`;
  return { proxy, url: database.toString() };
}
