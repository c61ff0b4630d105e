import { connect } from 'node:net';
import type { SpamdConfig } from '../config/index.ts';
import type { Verdict } from '../db/index.ts';

/**
 * Larger messages are not scanned, as spamc does by default: SpamAssassin's rules are written for ordinary mail,
 * and a big message can take spamd seconds.
 */
export const MAX_SCANNED_BYTES = 500 * 1024;
/** spamd's answer to CHECK is a few header lines; anything longer is not spamd. */
const MAX_REPLY_BYTES = 16 * 1024;

/**
 * The verdict in a complete reply header, or undefined while the header is still arriving. `SPAMD/1.1 0 EX_OK`
 * then `Spam: True ; 15.0 / 5.0` (older versions say Yes/No); any other status, or no Spam line, is a failure.
 */
function verdictOf(reply: string): Verdict | undefined {
  const end = reply.indexOf('\r\n\r\n');
  if (end < 0) return undefined;
  const header = reply.slice(0, end);
  const status = /^SPAMD\/\d+\.\d+ (\d+) /.exec(header);
  if (status?.[1] !== '0') return 'TEMPERROR';
  const spam = /^Spam:[ \t]*(True|Yes|False|No)\b/im.exec(header);
  if (!spam) return 'TEMPERROR';
  return /^(True|Yes)$/i.test(spam[1]!) ? 'FAIL' : 'PASS';
}

/**
 * Asks SpamAssassin's spamd (SPAMC/1.5 CHECK) whether a message is spam: FAIL when it is, PASS when it is not,
 * NONE when the message is too big to scan, TEMPERROR when spamd cannot be reached, fails or takes longer than the
 * timeout. The message should begin with our trace header, from whose Received: SpamAssassin takes the client's address.
 */
export function createSpamScanner(settings: SpamdConfig) {
  return function scanForSpam(message: readonly Buffer[]): Promise<Verdict> {
    const size = message.reduce((sum, chunk) => sum + chunk.length, 0);
    if (size > MAX_SCANNED_BYTES) return Promise.resolve('NONE');
    return new Promise<Verdict>((resolve) => {
      let reply = '';
      const socket = connect({ host: settings.host, port: settings.port });
      const finish = (verdict: Verdict) => {
        clearTimeout(timer);
        socket.destroy();
        resolve(verdict);
      };
      const timer = setTimeout(() => finish('TEMPERROR'), settings.timeoutMs);
      socket.setEncoding('latin1');
      socket.once('connect', () => {
        socket.write(`CHECK SPAMC/1.5\r\nContent-length: ${size}\r\n\r\n`);
        for (const chunk of message) socket.write(chunk);
        socket.end();
      });
      socket.on('data', (text: string) => {
        reply += text;
        const verdict = reply.length > MAX_REPLY_BYTES ? 'TEMPERROR' : verdictOf(reply);
        if (verdict) finish(verdict);
      });
      socket.once('end', () => finish(verdictOf(reply) ?? 'TEMPERROR'));
      socket.once('error', () => finish('TEMPERROR'));
    });
  };
}

export type SpamScanner = ReturnType<typeof createSpamScanner>;
