import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import { after, before, test } from 'node:test';
import { simpleParser } from 'mailparser';
import { SMTPServer } from 'smtp-server';
import { type DnsServer, startDnsServer } from '../helpers/dns-server.ts';
import { createVerifiedDomain } from '../helpers/domains.ts';
import { createInstallation } from '../helpers/process.ts';
import { sendMail } from '../helpers/smtp.ts';
import { type MailroomProcess, startMailroom } from './processes.ts';
import { createForwardEndpoint, routeAddress, waitForDelivery } from './setup.ts';

const API_KEY = 'mr_test_forward_crash_0123456789ab';

/** A relay that reads each message and, while `holding`, never answers the end of its DATA. */
async function startHoldingRelay() {
  const received: Array<{ messageId: string; subject: string; rcptTo: string[] }> = [];
  const waiters: Array<{ count: number; resolve(): void }> = [];
  const relay = {
    holding: true,
    received,
    url: '',
    waitFor(count: number) {
      return new Promise<void>((resolve) => {
        if (received.length >= count) resolve();
        else waiters.push({ count, resolve });
      });
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS', 'AUTH'],
    logger: false,
    onData(stream, session, callback) {
      const hold = relay.holding;
      simpleParser(stream).then((parsed) => {
        received.push({
          messageId: parsed.messageId ?? '',
          subject: parsed.subject ?? '',
          rcptTo: session.envelope.rcptTo.map((r) => r.address),
        });
        for (const waiter of waiters.filter((w) => received.length >= w.count)) {
          waiters.splice(waiters.indexOf(waiter), 1);
          waiter.resolve();
        }
        if (!hold) callback();
      }, callback);
    },
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  relay.url = `smtp://127.0.0.1:${(server.server.address() as AddressInfo).port}`;
  return relay;
}

let dns: DnsServer;
let relay: Awaited<ReturnType<typeof startHoldingRelay>>;
let installation: Awaited<ReturnType<typeof createInstallation>>;
let server: MailroomProcess;

before(async () => {
  dns = await startDnsServer();
  relay = await startHoldingRelay();
  installation = await createInstallation({
    MAILROOM_API_KEY: API_KEY,
    DNS_SERVERS: dns.address,
    SMTP_RELAY_URL: relay.url,
    DELIVERY_LEASE_SECONDS: '1',
    DELIVERY_RETRY_SCALE: '0.001',
  });
});
after(async () => {
  await server?.stop('SIGKILL');
  await installation?.remove();
  await relay?.close();
  await dns?.close();
});

test('kill -9 while a forward waits for the relay to answer its DATA: after restart it is sent again, recorded once, with the same Message-ID; a resend has a new one', async () => {
  server = await startMailroom(installation.env, API_KEY);
  const domain = await createVerifiedDomain(server.api, dns, 'fwdcrash.test');
  const endpoint = await createForwardEndpoint(server.api, 'Boss', 'email', { forwardTo: 'boss@elsewhere.test' });
  await routeAddress(server.api, 'inbox@fwdcrash.test', domain.id, { endpointId: endpoint.id });
  const sent = await sendMail({
    port: server.smtpPort,
    from: 'ann@sender.test',
    to: 'inbox@fwdcrash.test',
    subject: 'Held',
  });
  assert.equal(sent.code, 250, sent.response);
  await relay.waitFor(1);
  await server.stop('SIGKILL');
  relay.holding = false;

  server = await startMailroom(installation.env, API_KEY);
  const delivery = await waitForDelivery(server.api, sent.queuedIds[0]!);
  assert.equal(delivery.status, 'success');
  assert.deepEqual(
    delivery.attemptLog.map((attempt) => [attempt.attempt, attempt.success]),
    [[1, true]],
  );
  // The copy the crash cut short and the one sent after it are one message to the recipient's server.
  const sameMessage = `<${delivery.id}.0@fwdcrash.test>`;
  assert.deepEqual(
    relay.received.map((message) => [message.messageId, message.subject, message.rcptTo]),
    [
      [sameMessage, 'Held', ['boss@elsewhere.test']],
      [sameMessage, 'Held', ['boss@elsewhere.test']],
    ],
  );
  // A resend is asked for because the copy was lost: it is a new message, which that server does not drop.
  const resent = await server.api.post(`/api/v2/emails/${sent.queuedIds[0]}/resend`, { endpointId: endpoint.id });
  assert.equal(resent.status, 200, JSON.stringify(resent.body));
  await relay.waitFor(3);
  assert.equal(relay.received[2]!.messageId, `<${delivery.id}.1@fwdcrash.test>`);
  assert.equal(await server.stop('SIGTERM'), 0);
});
