import { Socket } from 'node:net';

/**
 * The socket of a PostgreSQL connection, probing a silent peer after 10 s, every 5 s, and given up after 3 probes
 * unanswered. A server whose host vanished (a failover behind a virtual IP, a cut network) would otherwise leave a
 * query waiting for its answer for ever; a server busy with a long statement still answers the probes.
 */
export function keepAliveSocket(): Socket {
  return new Socket().setKeepAlive({ enable: true, initialDelay: 10_000, interval: 5_000, count: 3 });
}
