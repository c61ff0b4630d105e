import { createServer } from 'node:net';

/** A loopback port that was free a moment ago, e.g. so that a restarted process can listen where its predecessor did. */
export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}
