import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { type MailWorld, rawMessage, startMailWorld } from './setup.ts';

let world: MailWorld;

before(async () => {
  world = await startMailWorld(['hostile@inbox.test']);
});
after(() => world.close());

/** The e2 thread view of one stored email, which carries its Date header as `date`. */
async function threadMessage(emailId: string) {
  const detail = await world.api.get(`/api/e2/emails/${emailId}`);
  assert.equal(detail.status, 200);
  const thread = await world.api.get(`/api/e2/mail/threads/${detail.body.thread_id}`);
  assert.equal(thread.status, 200);
  return thread.body.messages.find((message: { id: string }) => message.id === emailId);
}

test('an unparsable Date header is stored as no date, not as the time the message was parsed', async () => {
  const headers = { From: 'a@sender.test', To: 'hostile@inbox.test', Subject: 'When?' };
  const [unreadable] = await world.deliver({
    to: 'hostile@inbox.test',
    raw: rawMessage({ ...headers, Date: 'garbage yesterday' }, 'body'),
  });
  const [readable] = await world.deliver({
    to: 'hostile@inbox.test',
    raw: rawMessage({ ...headers, Date: 'Thu, 5 Mar 2026 10:00:00 +0000' }, 'body'),
  });
  assert.equal((await threadMessage(unreadable!)).date, null);
  assert.equal((await threadMessage(readable!)).date, '2026-03-05T10:00:00.000Z');
});
