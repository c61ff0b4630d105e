import { setTimeout as sleep } from 'node:timers/promises';
import dns2 from 'dns2';
import { freePort } from './ports.ts';

const { Packet } = dns2;

export type ZoneRecord =
  | { type: 'TXT'; data: string | string[] }
  | { type: 'MX'; exchange: string; priority: number }
  | { type: 'NS'; ns: string }
  | { type: 'CNAME'; domain: string }
  | { type: 'A'; address: string }
  | { type: 'AAAA'; address: string };

const TYPE_CODES: Record<ZoneRecord['type'], number> = {
  A: Packet.TYPE.A,
  NS: Packet.TYPE.NS,
  CNAME: Packet.TYPE.CNAME,
  MX: Packet.TYPE.MX,
  TXT: Packet.TYPE.TXT,
  AAAA: Packet.TYPE.AAAA,
};

/**
 * A real DNS server on loopback (UDP and TCP on one port) answering from an in-memory zone the test edits.
 * Names not in the zone answer NXDOMAIN; a known name without records of the asked type answers empty; a name set
 * failing answers SERVFAIL; a name set slow answers after its delay.
 */
export async function startDnsServer() {
  const zone = new Map<string, ZoneRecord[] | 'servfail'>();
  const delays = new Map<string, number>();
  const askWaiters = new Map<string, Array<() => void>>();
  const key = (name: string) => name.toLowerCase().replace(/\.$/, '');
  const server = dns2.createServer({
    udp: true,
    tcp: true,
    async handle(request, send) {
      const response = Packet.createResponseFromRequest(request);
      const [question] = request.questions;
      if (question) {
        for (const resolve of askWaiters.get(key(question.name)) ?? []) resolve();
        askWaiters.delete(key(question.name));
      }
      const delay = question ? delays.get(key(question.name)) : undefined;
      if (delay) await sleep(delay);
      const records = question ? zone.get(key(question.name)) : undefined;
      if (!question || !records) {
        (response.header as { rcode: number }).rcode = 3;
      } else if (records === 'servfail') {
        (response.header as { rcode: number }).rcode = 2;
      } else {
        for (const record of records) {
          if (TYPE_CODES[record.type] !== question.type) continue;
          const { type, ...data } = record;
          response.answers.push({
            name: question.name,
            class: Packet.CLASS.IN,
            ttl: 60,
            ...data,
            type: TYPE_CODES[type],
          } as never);
        }
      }
      send(response);
    },
  });
  const port = await freePort();
  await server.listen({ udp: { port, address: '127.0.0.1' }, tcp: { port, address: '127.0.0.1' } });
  return {
    /** Value for DNS_SERVERS. */
    address: `127.0.0.1:${port}`,
    set(name: string, records: ZoneRecord[]) {
      zone.set(key(name), records);
    },
    add(name: string, record: ZoneRecord) {
      const records = zone.get(key(name));
      zone.set(key(name), [...(Array.isArray(records) ? records : []), record]);
    },
    /** Answers every question about `name` with SERVFAIL, until it is set again. */
    fail(name: string) {
      zone.set(key(name), 'servfail');
    },
    /** Resolves when the next question about `name` arrives (before any delay `slow` gives its answer). */
    asked(name: string): Promise<void> {
      return new Promise((resolve) => askWaiters.set(key(name), [...(askWaiters.get(key(name)) ?? []), resolve]));
    },
    /** Answers every question about `name` only after `ms` (0: at once again). */
    slow(name: string, ms: number) {
      delays.set(key(name), ms);
    },
    remove(name: string) {
      zone.delete(key(name));
    },
    clear() {
      zone.clear();
      delays.clear();
    },
    close: () => server.close(),
  };
}

export type DnsServer = Awaited<ReturnType<typeof startDnsServer>>;
