import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { type MailWorld, startMailWorld } from './setup.ts';

let world: MailWorld;
let brokenId: string;
let goodId: string;

before(async () => {
  world = await startMailWorld(['support@inbox.test']);
  const broken = await readFile(join(import.meta.dirname, '..', 'fixtures', 'mime', 'broken-boundary.eml'));
  [brokenId] = await world.deliver({ from: 'broken@sender.test', to: 'support@inbox.test', raw: broken });
  [goodId] = await world.deliver({ from: 'fine@sender.test', to: 'support@inbox.test', subject: 'Fine', text: 'ok' });
});
after(() => world.close());

test('GET /api/v2/mail?status=failed lists only mail whose MIME could not be parsed, with the reason', async () => {
  const failed = await world.api.get('/api/v2/mail?status=failed');
  assert.equal(failed.status, 200);
  assert.deepEqual(
    failed.body.emails.map((email: { id: string }) => email.id),
    [brokenId],
  );
  const [item] = failed.body.emails;
  assert.equal(item.parseSuccess, false);
  assert.equal(typeof item.parseError, 'string');
  assert.notEqual(item.parseError, '');

  const processed = await world.api.get('/api/v2/mail?status=processed');
  assert.deepEqual(
    processed.body.emails.map((email: { id: string }) => email.id),
    [goodId],
  );
  const all = await world.api.get('/api/v2/mail?status=all');
  assert.equal(all.body.pagination.total, 2);
});

test('the detail of unparseable mail says why and still serves the raw message', async () => {
  const detail = await world.api.get(`/api/v2/mail/${brokenId}`);
  assert.equal(detail.status, 200);
  assert.equal(detail.body.metadata.parseSuccess, false);
  assert.equal(
    detail.body.metadata.parseError,
    (await world.api.get('/api/v2/mail?status=failed')).body.emails[0].parseError,
  );
  const raw = await fetch(`${world.server.baseUrl}/api/v2/mail/${brokenId}/raw`, {
    headers: { authorization: `Bearer ${world.server.apiKey}` },
  });
  assert.equal(raw.status, 200);
  assert.match(await raw.text(), /This part uses a boundary the header never declared\./);
});
