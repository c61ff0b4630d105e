import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { systemClock } from '../../src/core/index.ts';
import { HtmlCleaner, MailService } from '../../src/mail/index.ts';
import { extractAttachment, hashAttachments } from '../../src/mime/index.ts';
import { PostgresMailPages } from '../../src/search/index.ts';
import { type MailWorld, startMailWorld } from './setup.ts';

/** 1,100 stored emails (11 messages to 100 `+tag` recipients each) that all match one search word. */

let world: MailWorld;
const TOTAL = 1_100;

before(async () => {
  world = await startMailWorld(['inbox@cap.test']);
  for (let message = 0; message < TOTAL / 100; message++) {
    const to = Array.from({ length: 100 }, (_, i) => `inbox+${message * 100 + i}@cap.test`);
    await world.deliver({ from: 'bulk@sender.test', to, subject: `Capword batch ${message}`, text: 'same body' });
  }
});
after(() => world.close());

const ids = (body: { emails: Array<{ id: string }> }) => body.emails.map((email) => email.id);

describe('a search counts at most 1,000 matches', () => {
  test('total is 1,000 with totalIsExact false; the page is the newest matches, as the unsearched list orders them', async () => {
    const all = await world.api.get('/api/v2/mail?limit=100');
    assert.deepEqual(all.body.pagination, { total: TOTAL, limit: 100, offset: 0, hasMore: true, totalIsExact: true });
    const searched = await world.api.get('/api/v2/mail?limit=100&search=capword');
    assert.deepEqual(searched.body.pagination, {
      total: 1000,
      limit: 100,
      offset: 0,
      hasMore: true,
      totalIsExact: false,
    });
    assert.deepEqual(ids(searched.body), ids(all.body));
  });

  test('hasMore still pages past the counted 1,000 and stops at the real end', async () => {
    const past = await world.api.get('/api/v2/mail?limit=100&offset=1000&search=capword');
    assert.equal(past.body.emails.length, 100);
    assert.equal(past.body.pagination.hasMore, false);
    const unsearched = await world.api.get('/api/v2/mail?limit=100&offset=1000');
    assert.deepEqual(ids(past.body), ids(unsearched.body));
    const middle = await world.api.get('/api/v2/mail?limit=10&offset=990&search=capword');
    assert.equal(middle.body.pagination.hasMore, true);
  });

  test('a narrower search counts exactly; an address filter counts up to the limit too', async () => {
    const one = await world.api.get('/api/v2/mail?search=%22batch%203%22');
    assert.deepEqual(one.body.pagination, { total: 100, limit: 50, offset: 0, hasMore: true, totalIsExact: true });
    const address = await world.api.get('/api/v2/mail?emailAddress=bulk@sender.test');
    assert.equal(address.body.pagination.total, 1000);
    assert.equal(address.body.pagination.totalIsExact, false);
    const e2 = await world.api.get('/api/e2/emails?search=capword&limit=1');
    assert.deepEqual(e2.body.pagination, { limit: 1, offset: 0, total: 1000, has_more: true, total_is_exact: false });
  });

  test('a search of negated words only counts up to the limit too, and pages like the unsearched list', async () => {
    const all = await world.api.get('/api/v2/mail?limit=100');
    const without = await world.api.get('/api/v2/mail?limit=100&search=-nosuchword');
    assert.deepEqual(without.body.pagination, {
      total: 1000,
      limit: 100,
      offset: 0,
      hasMore: true,
      totalIsExact: false,
    });
    assert.deepEqual(ids(without.body), ids(all.body));
    const fewer = await world.api.get('/api/v2/mail?limit=100&search=-capword%20-%22batch%203%22');
    assert.deepEqual(fewer.body.pagination, { total: 0, limit: 100, offset: 0, hasMore: false, totalIsExact: true });
  });

  test('an email stored before the others but received after them (as recovery can store mail) leads the page', async () => {
    const oldest = ids((await world.api.get('/api/v2/mail?limit=1&offset=1099')).body)[0]!;
    await world.server.app.database.db
      .updateTable('emails')
      .set({ received_at: new Date(Date.now() + 60_000).toISOString() })
      .where('id', '=', oldest)
      .execute();
    const unsearched = await world.api.get('/api/v2/mail?limit=100');
    assert.equal(ids(unsearched.body)[0], oldest);
    const searched = await world.api.get('/api/v2/mail?limit=100&search=capword');
    assert.deepEqual(ids(searched.body), ids(unsearched.body));
    assert.deepEqual(searched.body.pagination, {
      total: 1000,
      limit: 100,
      offset: 0,
      hasMore: true,
      totalIsExact: false,
    });
  });

  test('PostgreSQL: a page that a walk of the newest emails cannot fill comes from the sorted matches instead', async (t) => {
    const { app } = world.server;
    if (app.database.kind !== 'postgres') return t.skip('the walk is PostgreSQL-only');
    const shortWalk = new MailService({
      db: app.database.db,
      pages: new PostgresMailPages(app.database.db, { recentWalkEmails: 10 }),
      clock: systemClock,
      raw: app.blobs,
      extractAttachment,
      hashAttachments,
      cleaner: new HtmlCleaner(),
    });
    const { account_id: accountId } = await app.database.db
      .selectFrom('emails')
      .select('account_id')
      .executeTakeFirstOrThrow();
    for (const page of [
      { limit: 100, offset: 0 },
      { limit: 5, offset: 3 },
      { limit: 100, offset: 1050 },
    ]) {
      const walked = await app.mail.list(accountId, { search: 'capword' }, page);
      const sorted = await shortWalk.list(accountId, { search: 'capword' }, page);
      assert.deepEqual(sorted, walked);
      assert.equal(walked.emails.length, Math.min(page.limit, TOTAL - page.offset));
    }
  });
});
