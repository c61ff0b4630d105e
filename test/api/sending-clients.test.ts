import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { type ApiResponse, Inbound as InboundSdk, type PostEmailReplyResponse } from '@inboundemail/sdk';
import Inbound, { APIError } from 'inboundemail';
import { type MailWorld, rawMessage, startMailWorld } from '../mail/setup.ts';

let world: MailWorld;
let emailId: string;

const NOT_SUPPORTED = { error: 'Sending is not supported by Mailroom' };

before(async () => {
  world = await startMailWorld(['desk@sending.test']);
  [emailId] = await world.deliver({
    from: 'alice@client.test',
    to: 'desk@sending.test',
    raw: rawMessage({ From: 'alice@client.test', To: 'desk@sending.test', Subject: 'Hello' }, 'Hi\n'),
  });
});
after(() => world.close());

describe('inboundemail (e2): sending methods', () => {
  test('emails.delete and emails.reply answer 501 with x-should-retry: false, so the client asks once', async () => {
    const requests: string[] = [];
    const client = new Inbound({
      apiKey: world.server.apiKey,
      baseURL: world.server.baseUrl,
      fetch: async (input, init) => {
        requests.push(`${init?.method} ${new URL(String(input)).pathname}`);
        return fetch(input, init);
      },
    });
    const calls = [
      () => client.emails.delete(emailId),
      () => client.emails.reply(emailId, { from: 'desk@sending.test', text: 'Thanks' }),
    ];
    for (const call of calls) {
      await assert.rejects(call(), (error) => {
        assert.ok(error instanceof APIError);
        assert.equal(error.status, 501);
        assert.deepEqual(error.error, NOT_SUPPORTED);
        assert.equal(error.headers?.get('x-should-retry'), 'false');
        return true;
      });
    }
    assert.deepEqual(requests, [`DELETE /api/e2/emails/${emailId}`, `POST /api/e2/emails/${emailId}/reply`]);
  });
});

describe('@inboundemail/sdk (v2): sending methods', () => {
  const sdk = () => new InboundSdk(world.server.apiKey, `${world.server.baseUrl}/api/v2`);

  test('email.reply, email.sent.reply, reply and quickReply answer the 501 error', async () => {
    const params = { from: 'desk@sending.test', text: 'Thanks' };
    const answers: ApiResponse<PostEmailReplyResponse>[] = [
      await sdk().email.reply(emailId, params),
      await sdk().email.sent.reply(emailId, params),
      await sdk().reply(emailId, params),
      await sdk().quickReply(emailId, 'Thanks', 'desk@sending.test'),
    ];
    assert.deepEqual(answers, [NOT_SUPPORTED, NOT_SUPPORTED, NOT_SUPPORTED, NOT_SUPPORTED]);
  });

  test('email.sent.get answers the 501 error; the raw answer carries x-should-retry: false', async () => {
    assert.deepEqual(await sdk().email.sent.get(emailId), NOT_SUPPORTED);
    for (const [method, path] of [
      ['GET', `/api/v2/emails/${emailId}`],
      ['POST', `/api/v2/emails/${emailId}/reply`],
    ]) {
      const response = await fetch(`${world.server.baseUrl}${path}`, {
        method,
        headers: { authorization: `Bearer ${world.server.apiKey}`, 'content-type': 'application/json' },
        body: method === 'POST' ? JSON.stringify({ from: 'desk@sending.test', text: 'x' }) : undefined,
      });
      assert.equal(response.status, 501);
      assert.equal(response.headers.get('x-should-retry'), 'false');
      assert.deepEqual(await response.json(), NOT_SUPPORTED);
    }
  });
});
