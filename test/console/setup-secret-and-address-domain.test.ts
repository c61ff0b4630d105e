import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { Webhook } from 'standardwebhooks';
import { createVerifiedDomain } from '../helpers/domains.ts';
import { sendMail } from '../helpers/smtp.ts';
import { browserSkipReason, signIn } from './browser.ts';
import { type ConsoleWorld, startConsoleWorld } from './world.ts';

describe('the console: a short MX host, a webhook signing secret, and the domain an address is typed on', {
  skip: browserSkipReason,
}, () => {
  let world: ConsoleWorld;
  let { dns, receiver, server, api, page } = {} as ConsoleWorld;
  let firstId: string;

  before(async () => {
    // A short MX host, as MX_HOST's default (the machine's name) often is: the domain page warns about it.
    world = await startConsoleWorld({ MX_HOST: 'mailbox' });
    ({ dns, receiver, server, api, page } = world);
    firstId = (await createVerifiedDomain(api, dns, 'first.test')).id;
    // Listed first, being the newest.
    await createVerifiedDomain(api, dns, 'second.test');
    await signIn(page, server.baseUrl, server.apiKey);
    await page.getByRole('link', { name: 'Setup' }).click();
  });
  after(async () => {
    await world?.close();
  });

  test('a domain whose MX record names a short host says so, with what to do', async () => {
    await page.goto(`${server.baseUrl}/#/setup/domains/${firstId}`);
    const warning = page.locator('p.form-error[role=alert]');
    await warning.waitFor();
    assert.equal(
      await warning.innerText(),
      'The MX record names "mailbox", a short host name the internet cannot resolve: set MX_HOST to this ' +
        "server's public DNS name, restart it, then Check now: the records follow it.",
    );
    await page.getByRole('link', { name: 'Back to setup' }).click();
  });

  test('an address typed on the older domain is created there, whatever the list showed first', async () => {
    assert.equal(await page.getByLabel('Domain', { exact: true }).locator('option:checked').innerText(), 'second.test');
    await page.getByLabel('Address', { exact: true }).fill('sales@first.test');
    await page.getByRole('button', { name: 'Create address' }).click();
    await page.getByRole('row', { name: /sales@first\.test/ }).waitFor();
    const listed = (await api.get('/api/v2/email-addresses')).body.data;
    assert.deepEqual(
      listed.map((one: { address: string; domainId: string }) => [one.address, one.domainId]),
      [['sales@first.test', firstId]],
    );
  });

  test('a generated signing secret is saved, and the webhooks to the endpoint carry its signature', async () => {
    await page.getByLabel('Endpoint name').fill('Signed');
    await page.getByLabel('Webhook URL').fill(receiver.url);
    await page.getByRole('button', { name: 'Generate' }).click();
    const secret = await page.getByLabel('Signing secret').inputValue();
    assert.match(secret, /^whsec_[A-Za-z0-9+/]{32}$/);
    await page.getByRole('button', { name: 'Create endpoint' }).click();
    await page.getByRole('row', { name: /Signed/ }).waitFor();
    const [endpoint] = (await api.get('/api/v2/endpoints')).body.data;
    assert.equal((await api.get(`/api/v2/endpoints/${endpoint.id}`)).body.config.secret, secret);

    const [address] = (await api.get('/api/v2/email-addresses')).body.data;
    assert.equal((await api.put(`/api/v2/email-addresses/${address.id}`, { endpointId: endpoint.id })).status, 200);
    const sent = await sendMail({ port: server.smtpPort, to: 'sales@first.test', subject: 'Signed' });
    assert.equal(sent.code, 250, sent.response);
    await receiver.waitForRequests(1);
    const [request] = receiver.requests;
    const verified = new Webhook(secret).verify(request!.body, request!.headers as Record<string, string>) as {
      email: { subject: string };
    };
    assert.equal(verified.email.subject, 'Signed');
  });

  test('emptying the secret in Edit saves the endpoint unsigned; the field is for webhooks only', async () => {
    await page.getByRole('button', { name: 'Edit' }).click();
    const field = page.getByLabel('Signing secret').last();
    assert.match(await field.inputValue(), /^whsec_/);
    await field.fill('');
    await page.getByRole('button', { name: 'Save endpoint' }).click();
    await page.getByRole('button', { name: 'Save endpoint' }).waitFor({ state: 'detached' });
    const [endpoint] = (await api.get('/api/v2/endpoints')).body.data;
    const config = (await api.get(`/api/v2/endpoints/${endpoint.id}`)).body.config;
    assert.deepEqual([config.url, 'secret' in config], [receiver.url, false]);

    await page.getByLabel('Type').selectOption('email');
    assert.equal(await page.getByLabel('Signing secret').isVisible(), false);
  });
});
