const DAYS = ['Sun', 'Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat'];
const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];

/** RFC 5322 date-time in UTC, e.g. `Sun, 22 Nov 2026 02:01:51 +0000`. */
export function rfc5322Date(at: Date): string {
  const pad = (n: number) => String(n).padStart(2, '0');
  return (
    `${DAYS[at.getUTCDay()]}, ${pad(at.getUTCDate())} ${MONTHS[at.getUTCMonth()]} ${at.getUTCFullYear()} ` +
    `${pad(at.getUTCHours())}:${pad(at.getUTCMinutes())}:${pad(at.getUTCSeconds())} +0000`
  );
}

/** Client-supplied names go into a header: keep only printable ASCII so they cannot fold or inject lines. */
function clean(value: string | null | undefined, fallback: string): string {
  const printable = (value ?? '').replace(/[^\x21-\x7e]/g, '').slice(0, 255);
  return printable || fallback;
}

/** The `Received:` trace header (RFC 5321 §4.4) prepended to every stored message. */
export function receivedHeader(input: {
  queueId: string;
  helo: string | null;
  clientHostname: string | null;
  clientIp: string;
  secure: boolean;
  mxHost: string;
  recipients: string[];
  at: Date;
}): Buffer {
  const ip = `[${clean(input.clientIp, 'unknown')}]`;
  const hostname = clean(input.clientHostname, '');
  const client = hostname && !hostname.startsWith('[') ? `${hostname} ${ip}` : ip;
  const from = `from ${clean(input.helo, 'unknown')} (${client})`;
  const by = `by ${clean(input.mxHost, 'localhost')} (Mailroom) with ${input.secure ? 'ESMTPS' : 'ESMTP'} id ${input.queueId}`;
  const forClause = input.recipients.length === 1 ? `\r\n\tfor <${clean(input.recipients[0], 'unknown')}>` : '';
  return Buffer.from(`Received: ${from}\r\n\t${by}${forClause};\r\n\t${rfc5322Date(input.at)}\r\n`, 'latin1');
}
