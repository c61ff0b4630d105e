import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { sendMail } from '../helpers/smtp.ts';
import {
  createForwardEndpoint,
  type DeliveryWorld,
  routeAddress,
  startDeliveryWorld,
  waitForDelivery,
} from './setup.ts';
import { type SmtpSink, startSmtpSink } from './smtp-sink.ts';

let world: DeliveryWorld;
let sink: SmtpSink;

before(async () => {
  sink = await startSmtpSink();
  world = await startDeliveryWorld('resend.test', { SMTP_RELAY_URL: sink.url });
});
after(async () => {
  await world.close();
  await sink.close();
});

test('resending a forward that succeeded on its retry sends it to every member again, not only the retried one', async () => {
  const { api, domainId, server } = world;
  const members = ['x@team.test', 'y@team.test', 'z@team.test'];
  const endpoint = await createForwardEndpoint(api, 'Team', 'email_group', { emails: members });
  await routeAddress(api, 'team@resend.test', domainId, { endpointId: endpoint.id });
  sink.refuse('y@team.test', 451, 1);
  const sent = await sendMail({ port: server.smtpPort, from: 'ann@sender.test', to: 'team@resend.test' });
  assert.equal(sent.code, 250, sent.response);
  const emailId = sent.queuedIds[0]!;
  const first = await waitForDelivery(api, emailId);
  assert.deepEqual([first.status, first.attempts], ['success', 2]);
  sink.clear();

  const resent = await api.post(`/api/v2/emails/${emailId}/resend`, { endpointId: endpoint.id });
  assert.deepEqual(resent.body, { success: true, message: 'Email queued for delivery', deliveryId: first.id });
  const again = await waitForDelivery(api, emailId, (d) => d.attempts === 3);
  assert.equal(again.status, 'success');
  assert.deepEqual(
    again.attemptLog[2]!.recipients!.map((r) => [r.address, r.status]),
    members.map((member) => [member, 'sent']),
  );
  assert.deepEqual(sink.messages.map((m) => m.rcptTo[0]).sort(), members);
});
