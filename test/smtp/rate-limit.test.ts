import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { startTestApp, type TestApp } from '../helpers/app.ts';
import { manualClock } from '../helpers/clock.ts';
import { type DnsServer, startDnsServer } from '../helpers/dns-server.ts';
import { createVerifiedDomain } from '../helpers/domains.ts';
import { type ApiClient, apiClient } from '../helpers/http.ts';
import { parsePrometheusText } from '../helpers/prometheus.ts';
import { openSmtpConversation, sendMail } from '../helpers/smtp.ts';
import { createAddress } from './mail-setup.ts';

const ADDRESS = 'inbox@limits.test';
const clock = manualClock();
let dns: DnsServer;
let server: TestApp;
let api: ApiClient;

before(async () => {
  dns = await startDnsServer();
  server = await startTestApp({ DNS_SERVERS: dns.address, SMTP_RATE_LIMIT_PER_MINUTE: '2' }, { clock });
  api = apiClient(server.baseUrl, server.apiKey);
  const domain = await createVerifiedDomain(api, dns, 'limits.test');
  await createAddress(api, ADDRESS, domain.id);
});
after(async () => {
  await server.close();
  await dns.close();
});

const send = () => sendMail({ port: server.smtpPort, from: 'ann@sender.test', to: ADDRESS, text: 'Hello' });

describe('SMTP_RATE_LIMIT_PER_MINUTE: messages per client address in a one-minute window', () => {
  test('the 3rd MAIL FROM of a minute from one address is 451 4.7.1 (temporary); a minute later it is accepted', async () => {
    assert.equal((await send()).code, 250);
    assert.equal((await send()).code, 250);
    const third = await send();
    assert.deepEqual(
      { ok: third.ok, response: third.response },
      { ok: false, response: '451 4.7.1 Too many messages from your address, try again in 60 seconds' },
    );

    clock.advanceSeconds(50);
    const conversation = await openSmtpConversation(server.smtpPort);
    assert.equal((await conversation.command('EHLO client.test')).slice(0, 3), '250');
    // The refusal is for this message only: the session stays open, and the client may try again later.
    assert.equal(
      await conversation.command('MAIL FROM:<ann@sender.test>'),
      '451 4.7.1 Too many messages from your address, try again in 10 seconds',
    );
    clock.advanceSeconds(10);
    assert.equal(await conversation.command('MAIL FROM:<ann@sender.test>'), '250 2.1.0 Accepted');
    await conversation.quit();
    assert.equal((await send()).code, 250);

    const list = await api.get('/api/v2/mail');
    assert.equal(list.body.emails.length, 3);
  });

  test('another client address has its own count', async () => {
    // The window opened at the end of the previous test is full for 127.0.0.1.
    assert.equal((await send()).code, 451);
    const elsewhere = await openSmtpConversation(server.smtpPort, '127.0.0.1', '127.0.0.2');
    await elsewhere.command('EHLO other.test');
    assert.equal(await elsewhere.command('MAIL FROM:<bob@sender.test>'), '250 2.1.0 Accepted');
    await elsewhere.quit();
  });

  test('each refusal is counted in the metrics as rate_limited', async () => {
    const metrics = parsePrometheusText((await api.get('/metrics')).body);
    assert.equal(metrics.value('mailroom_smtp_refusals_total', { reason: 'rate_limited' }), 3);
  });
});
