import dns2 from 'dns2';

const { Packet } = dns2;

const NXDOMAIN = 3;
const REFUSED = 5;

/** A record as a domain's DNS records list it (MX values are `priority host`); only TXT and MX are served. */
export interface ZoneRecord {
  recordType: string;
  name: string;
  value: string;
}

const bare = (name: string) => name.toLowerCase().replace(/\.$/, '');

/**
 * A DNS server on 127.0.0.1 (UDP, a free port) that answers for one domain and the names under it from the records
 * published to it. Every other name is REFUSED (Mailroom asks DNS_SERVERS everything, and the sandbox works offline),
 * but for its addresses, which do not exist here (NXDOMAIN): a webhook host then falls back to the system resolver
 * (`localhost`, /etc/hosts), where REFUSED would fail every webhook by name.
 */
export async function startSandboxDns(domain: string) {
  const zone = new Map<string, ZoneRecord[]>();
  const inZone = (name: string) => name === domain || name.endsWith(`.${domain}`);
  const server = dns2.createServer({
    udp: true,
    handle(request, send) {
      const response = Packet.createResponseFromRequest(request);
      const header = response.header as { rcode: number };
      const [question] = request.questions;
      const name = question ? bare(question.name) : '';
      const records = zone.get(name);
      const hostQuestion = question?.type === Packet.TYPE.A || question?.type === Packet.TYPE.AAAA;
      if (!question || (!inZone(name) && !hostQuestion)) header.rcode = REFUSED;
      else if (!inZone(name) || (!records && name !== domain)) header.rcode = NXDOMAIN;
      for (const record of records ?? []) {
        const base = { name: question!.name, class: Packet.CLASS.IN, ttl: 60 };
        if (record.recordType === 'TXT' && question!.type === Packet.TYPE.TXT) {
          response.answers.push({ ...base, type: Packet.TYPE.TXT, data: record.value } as never);
        } else if (record.recordType === 'MX' && question!.type === Packet.TYPE.MX) {
          const [priority, exchange] = record.value.split(/\s+/);
          response.answers.push({ ...base, type: Packet.TYPE.MX, priority: Number(priority), exchange } as never);
        }
      }
      send(response);
    },
  });
  const { udp } = await server.listen({ udp: { port: 0, address: '127.0.0.1' } });
  return {
    /** The value for DNS_SERVERS. */
    address: `127.0.0.1:${udp!.port}`,
    /** Serves these records from now on, next to those already published. */
    publish(records: ZoneRecord[]) {
      for (const record of records) {
        const name = bare(record.name);
        if (!inZone(name)) throw new Error(`${record.name} is outside the sandbox zone ${domain}`);
        const kept = (zone.get(name) ?? []).filter(
          (r) => r.recordType !== record.recordType || r.value !== record.value,
        );
        zone.set(name, [...kept, record]);
      }
    },
    close: () => server.close(),
  };
}

export type SandboxDns = Awaited<ReturnType<typeof startSandboxDns>>;
