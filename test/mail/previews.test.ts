import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { ApiClient } from '../helpers/http.ts';
import { type MailWorld, startMailWorld } from './setup.ts';

let world: MailWorld;
let api: ApiClient;

before(async () => {
  world = await startMailWorld(['inbox@previews.test']);
  api = world.api;
});
after(() => world.close());

/** The one stored email of a message sent now, as the v2 list shows it. */
async function listed(message: { subject: string; text?: string; html?: string }) {
  const [id] = await world.deliver({ from: 'sender@elsewhere.test', to: 'inbox@previews.test', ...message });
  const response = await api.get(`/api/v2/mail?emailId=${id}`);
  assert.equal(response.status, 200, JSON.stringify(response.body));
  return response.body.emails[0];
}

test('preview: the first 200 characters counted in code points, never half of an emoji', async () => {
  const item = await listed({ subject: 'emoji', text: `a${'😀'.repeat(250)}` });
  assert.equal(item.preview, `a${'😀'.repeat(199)}`);
  const threads = await api.get('/api/e2/mail/threads?search=emoji');
  assert.equal(threads.body.threads[0].latest_message.text_preview, `a${'😀'.repeat(199)}`);
});

test('preview of HTML-only mail decodes every named and numeric entity, and leaves unknown ones as written', async () => {
  const item = await listed({
    subject: 'entities',
    html: '<p>&eacute;t&eacute; &rsquo; &euro;5 &Eacute;&AMP;&lt;b&gt; &#x1F600;&#128512; &bogus;</p>',
  });
  assert.equal(item.preview, 'été ’ €5 É&<b> 😀😀 &bogus;');
});
