import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { type MailWorld, rawMessage, startMailWorld } from './setup.ts';

/** Message-ID and In-Reply-To keep only their `<id>`s: comments and phrases around them are no part of an id. */
let world: MailWorld;

const RECIPIENT = 'team@ids.test';

async function deliver(headers: Record<string, string>) {
  const [emailId] = await world.deliver({
    from: 'alice@partner.test',
    to: RECIPIENT,
    raw: rawMessage({ From: 'alice@partner.test', To: RECIPIENT, Subject: 'Plan', ...headers }, 'Body\n'),
  });
  const detail = await world.api.get(`/api/v2/mail/${emailId}`);
  assert.equal(detail.status, 200);
  return detail.body;
}

before(async () => {
  world = await startMailWorld([RECIPIENT]);
});
after(() => world.close());

test('a Message-ID with a comment is stored as its <id>, and a reply to that id joins its thread', async () => {
  const root = await deliver({ 'Message-ID': '<commented@partner.test> (sent from my phone)' });
  assert.equal(root.messageId, '<commented@partner.test>');
  const e2 = await world.api.get(`/api/e2/emails/${root.id}`);
  assert.equal(e2.body.message_id, '<commented@partner.test>');
  const reply = await deliver({
    'Message-ID': '<commented-reply@partner.test>',
    'In-Reply-To': '<commented@partner.test>',
  });
  assert.equal(reply.threadId, root.threadId);
  assert.equal(reply.threadPosition, 2);
});

test('In-Reply-To with a comment, a phrase or several ids presents its first <id>, and threads by all', async () => {
  const root = await deliver({ 'Message-ID': '<root@partner.test>' });
  const replies = [
    ['<root@partner.test> (Alice\'s message of "Mon, 2 Mar")', '<root@partner.test>'],
    ['Your message of Monday <root@partner.test>', '<root@partner.test>'],
    ['<root@partner.test> <elsewhere@other.test>', '<root@partner.test>'],
    // The thread's message is the second id: threading reads every id, the API shows the first.
    ['<elsewhere@other.test> <root@partner.test>', '<elsewhere@other.test>'],
  ];
  for (const [index, [header, presented]] of replies.entries()) {
    const reply = await deliver({ 'Message-ID': `<reply-${index}@partner.test>`, 'In-Reply-To': header! });
    assert.equal(reply.metadata.inReplyTo, presented, header);
    assert.deepEqual(reply.metadata.references, [], header);
    assert.equal(reply.threadId, root.threadId, header);
    assert.equal(reply.threadPosition, index + 2, header);
  }
});

test('Message-IDs that are no <id>, or one with spaces inside its brackets, never thread unrelated mail together', async () => {
  // Obsolete syntax (RFC 5322 §4.5.4) lets white space stand inside the brackets; the id is what is between.
  const spaced = await deliver({ 'Message-ID': '< spaced-one@partner.test >' });
  assert.equal(spaced.messageId, '<spaced-one@partner.test>');
  const other = await deliver({ 'Message-ID': '< spaced-two@partner.test >' });
  assert.notEqual(other.threadId, spaced.threadId);
  const reply = await deliver({
    'Message-ID': '<spaced-reply@partner.test>',
    'In-Reply-To': '<spaced-one@partner.test>',
  });
  assert.deepEqual([reply.threadId, reply.threadPosition], [spaced.threadId, 2]);
  // Two words are not two ids, and `<>` is none.
  const words = await deliver({ 'Message-ID': 'not an id' });
  const otherWords = await deliver({ 'Message-ID': 'not an id either' });
  assert.notEqual(otherWords.threadId, words.threadId);
  const empty = await deliver({ 'Message-ID': '<>', 'X-Seq': '1' });
  const otherEmpty = await deliver({ 'Message-ID': '<>', 'X-Seq': '2' });
  assert.deepEqual([empty.messageId, otherEmpty.threadPosition], ['', 1]);
  assert.notEqual(otherEmpty.threadId, empty.threadId);
});
