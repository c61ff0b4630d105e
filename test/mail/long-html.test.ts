import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { ApiClient } from '../helpers/http.ts';
import { type MailWorld, startMailWorld } from './setup.ts';

let world: MailWorld;
let api: ApiClient;

before(async () => {
  world = await startMailWorld(['inbox@long-html.test']);
  api = world.api;
});
after(() => world.close());

/** Two replies in one thread, each with this many paragraphs of HTML (30 characters each) and a script. */
async function threadOf(paragraphs: number) {
  const html = `${'<p onclick="steal()">hi</p>\n'.repeat(paragraphs)}<script>alert(1)</script>`;
  const ids: string[] = [];
  for (const [index, references] of [
    [1, ''],
    [2, `<long1-${paragraphs}@sender.test>`],
  ] as const) {
    const [id] = await world.deliver({
      from: 'sender@sender.test',
      to: 'inbox@long-html.test',
      subject: 'Long markup',
      html,
      messageId: `<long${index}-${paragraphs}@sender.test>`,
      headers: { References: references || undefined },
    });
    ids.push(id!);
  }
  return { ids, cleaned: `${'<p>hi</p>\n'.repeat(paragraphs)}\n` };
}

test('HTML past 64 KB is sanitized as short HTML is, on every read: v2 detail and thread, e2 email and thread', async () => {
  for (const paragraphs of [10, 10_000]) {
    const { ids, cleaned } = await threadOf(paragraphs);
    const detail = await api.get(`/api/v2/mail/${ids[0]}`);
    assert.equal(detail.status, 200, JSON.stringify(detail.body).slice(0, 200));
    assert.equal(detail.body.htmlBody, cleaned);
    const thread = await api.get(`/api/v2/mail/${ids[1]}/thread`);
    assert.deepEqual(
      thread.body.messages.map((message: { htmlBody: string }) => message.htmlBody === cleaned),
      [true, true],
    );
    const e2 = await api.get(`/api/e2/emails/${ids[1]}`);
    assert.equal(e2.body.html, cleaned);
    const e2Thread = await api.get(`/api/e2/mail/threads/${e2.body.thread_id}`);
    assert.deepEqual(
      e2Thread.body.messages.map((message: { html_body: string }) => message.html_body === cleaned),
      [true, true],
    );
    const marked = await api.patch(`/api/e2/emails/${ids[0]}`, { is_read: false });
    assert.equal(marked.body.html, cleaned);
  }
});
