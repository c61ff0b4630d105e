import { connect, createServer, type Socket } from 'node:net';

/**
 * A TCP relay on loopback to `target`, for tests of a peer that stops answering: `stall()` stops relaying in both
 * directions (bytes wait in the sockets, as on a network that drops everything for a while), `resume()` relays them.
 */
export async function startTcpProxy(target: { host: string; port: number }) {
  const sockets = new Set<Socket>();
  let stalled = false;
  const server = createServer((client) => {
    const upstream = connect(target.port, target.host);
    for (const socket of [client, upstream]) {
      sockets.add(socket);
      socket.on('close', () => sockets.delete(socket));
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
      from.on('data', (chunk) => to.write(chunk));
      from.on('end', () => to.end());
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
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}
