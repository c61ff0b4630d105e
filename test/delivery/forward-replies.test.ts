import assert from 'node:assert/strict';
import { type AddressInfo, createServer, type Server } from 'node:net';
import { after, before, test } from 'node:test';
import { sendMail } from '../helpers/smtp.ts';
import {
  createForwardEndpoint,
  type DeliveryWorld,
  routeAddress,
  startDeliveryWorld,
  waitForDelivery,
} from './setup.ts';

/**
 * A relay whose replies carry NUL bytes: it takes mail for every recipient but `refused@`, each time saying so with a
 * NUL in the text, as a broken or hostile server may.
 */
function startNulRelay(): Promise<Server> {
  const relay = createServer((socket) => {
    socket.on('error', () => {});
    socket.write('220 relay.test\r\n');
    let buffered = '';
    let inData = false;
    socket.on('data', (chunk: Buffer) => {
      buffered += chunk.toString('latin1');
      for (let end = buffered.indexOf('\r\n'); end >= 0; end = buffered.indexOf('\r\n')) {
        const line = buffered.slice(0, end);
        buffered = buffered.slice(end + 2);
        if (inData) {
          if (line === '.') {
            inData = false;
            socket.write('250 queued\u0000as 42\r\n');
          }
          continue;
        }
        const command = line.slice(0, 4).toUpperCase();
        if (command === 'EHLO') socket.write('250-relay.test\r\n250 8BITMIME\r\n');
        else if (command === 'RCPT' && /refused@/i.test(line)) socket.write('550 no such\u0000user\r\n');
        else if (command === 'DATA') {
          inData = true;
          socket.write('354 go on\r\n');
        } else if (command === 'QUIT') socket.end('221 bye\r\n');
        else socket.write('250 ok\r\n');
      }
    });
  });
  return new Promise((resolve) => relay.listen(0, '127.0.0.1', () => resolve(relay)));
}

let relay: Server;
let world: DeliveryWorld;

before(async () => {
  relay = await startNulRelay();
  const { port } = relay.address() as AddressInfo;
  world = await startDeliveryWorld('replies.test', { SMTP_RELAY_URL: `smtp://127.0.0.1:${port}` });
});
after(async () => {
  await world.close();
  relay.close();
});

test('SMTP replies holding NUL bytes are recorded once, the NULs as U+FFFD, and nothing is sent again', async () => {
  const group = await createForwardEndpoint(world.api, 'Group', 'email_group', {
    emails: ['taken@elsewhere.test', 'refused@elsewhere.test'],
  });
  await routeAddress(world.api, 'team@replies.test', world.domainId, { endpointId: group.id });
  const sent = await sendMail({ port: world.server.smtpPort, to: 'team@replies.test', subject: 'Hi', text: 'Hello' });
  assert.equal(sent.code, 250, sent.response);
  const delivery = await waitForDelivery(world.api, sent.queuedIds[0]!);
  assert.deepEqual([delivery.status, delivery.attempts], ['failed', 1]);
  assert.deepEqual(delivery.attemptLog[0]!.recipients, [
    { address: 'taken@elsewhere.test', status: 'sent', response: '250 queued\uFFFDas 42' },
    {
      address: 'refused@elsewhere.test',
      status: 'failed',
      error: "Can't send mail - all recipients were rejected: 550 no such\uFFFDuser",
    },
  ]);
});
