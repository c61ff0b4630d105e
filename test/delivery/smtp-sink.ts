import type { AddressInfo } from 'node:net';
import { type ParsedMail, simpleParser } from 'mailparser';
import { SMTPServer } from 'smtp-server';

export interface SunkMessage {
  mailFrom: string;
  rcptTo: string[];
  /** Whether the sender asked for SMTPUTF8: what a server without the extension would refuse. */
  smtpUtf8: boolean;
  parsed: ParsedMail;
}

/**
 * A second SMTP server on loopback playing the relay (SMTP_RELAY_URL) or a recipient's MX. It records every message
 * and can be told to answer RCPT for an address with a temporary (4xx) or permanent (5xx) refusal a number of times.
 */
export async function startSmtpSink() {
  const messages: SunkMessage[] = [];
  const refusals = new Map<string, { code: number; times: number }>();
  const waiters: Array<{ count: number; resolve: () => void }> = [];
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS', 'AUTH'],
    logger: false,
    onRcptTo(address, _session, callback) {
      const refusal = refusals.get(address.address.toLowerCase());
      if (refusal && refusal.times > 0) {
        refusal.times--;
        const error = new Error(refusal.code >= 500 ? 'No such user here' : 'Try again later') as Error & {
          responseCode: number;
        };
        error.responseCode = refusal.code;
        return callback(error);
      }
      callback();
    },
    onData(stream, session, callback) {
      simpleParser(stream).then(
        (parsed) => {
          messages.push({
            mailFrom: session.envelope.mailFrom ? session.envelope.mailFrom.address : '',
            rcptTo: session.envelope.rcptTo.map((r) => r.address),
            smtpUtf8: session.envelope.smtpUtf8 === true,
            parsed,
          });
          for (const waiter of [...waiters]) {
            if (messages.length >= waiter.count) {
              waiters.splice(waiters.indexOf(waiter), 1);
              waiter.resolve();
            }
          }
          callback();
        },
        (error) => callback(error),
      );
    },
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.server.address() as AddressInfo;
  return {
    port,
    url: `smtp://127.0.0.1:${port}`,
    messages,
    /** Refuses RCPT TO `address` with `code` the next `times` times. */
    refuse(address: string, code: number, times = 1) {
      refusals.set(address.toLowerCase(), { code, times });
    },
    waitForMessages(count: number, timeoutMs = 10_000): Promise<void> {
      if (messages.length >= count) return Promise.resolve();
      return new Promise((resolve, reject) => {
        const timer = setTimeout(
          () => reject(new Error(`expected ${count} messages, got ${messages.length}`)),
          timeoutMs,
        );
        waiters.push({
          count,
          resolve: () => {
            clearTimeout(timer);
            resolve();
          },
        });
      });
    },
    clear() {
      messages.length = 0;
      refusals.clear();
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

export type SmtpSink = Awaited<ReturnType<typeof startSmtpSink>>;
