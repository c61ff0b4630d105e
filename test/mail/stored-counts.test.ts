import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { apiClient } from '../helpers/http.ts';
import { type MailWorld, startMailWorld } from './setup.ts';

/**
 * An unsearched list takes its `pagination.total` from counts that triggers keep (migration 0007). Every check
 * compares it with the exact figure and with the same list narrowed by `timeRange=90d`, which counts the emails
 * themselves (all of this mail is recent), after each kind of change to stored mail.
 */

let world: MailWorld;
const one: string[] = [];
const two: string[] = [];
let broken: string;

const LISTS = [
  '',
  'includeArchived=true',
  'domain=one.test',
  'domain=two.test',
  'domain=two.test&includeArchived=true',
  'domain=all',
  'domain=unknown.test',
  'status=processed',
  'status=failed',
];
const E2_STATUSES = ['all', 'read', 'unread', 'archived', 'delivered', 'failed'];

async function totals(): Promise<Record<string, number>> {
  const result: Record<string, number> = {};
  for (const query of LISTS) {
    const listed = await world.api.get(`/api/v2/mail?${query}`);
    const counted = await world.api.get(`/api/v2/mail?${query}${query ? '&' : ''}timeRange=90d`);
    assert.equal(listed.status, 200, JSON.stringify(listed.body));
    assert.equal(listed.body.pagination.totalIsExact, true);
    assert.equal(listed.body.pagination.total, counted.body.pagination.total, `total of ?${query}`);
    result[query || 'default'] = listed.body.pagination.total;
  }
  for (const status of E2_STATUSES) {
    const listed = await world.api.get(`/api/e2/emails?status=${status}`);
    const counted = await world.api.get(`/api/e2/emails?status=${status}&time_range=90d`);
    assert.equal(listed.body.pagination.total, counted.body.pagination.total, `total of e2 status=${status}`);
    result[`e2 ${status}`] = listed.body.pagination.total;
  }
  return result;
}

function expected(overrides: Record<string, number>): Record<string, number> {
  return {
    default: 0,
    'includeArchived=true': 0,
    'domain=one.test': 0,
    'domain=two.test': 0,
    'domain=two.test&includeArchived=true': 0,
    'domain=all': 0,
    'domain=unknown.test': 0,
    'status=processed': 0,
    'status=failed': 0,
    'e2 all': 0,
    'e2 read': 0,
    'e2 unread': 0,
    'e2 archived': 0,
    'e2 delivered': 0,
    'e2 failed': 0,
    ...overrides,
  };
}

before(async () => {
  // The bursts below come from one address, loopback, more than 10 at a time.
  world = await startMailWorld(['inbox@one.test', 'sales@two.test'], { SMTP_MAX_CONNECTIONS_PER_IP: '20' });
  // Delivered at once, so on PostgreSQL several transactions add to the counts concurrently.
  const delivered = await Promise.all([
    ...Array.from({ length: 6 }, (_, i) =>
      world.deliver({ from: 'a@sender.test', to: 'inbox@one.test', subject: `One ${i}`, text: 'x' }),
    ),
    ...Array.from({ length: 4 }, (_, i) =>
      world.deliver({ from: 'b@sender.test', to: 'sales@two.test', subject: `Two ${i}`, text: 'y' }),
    ),
  ]);
  for (const ids of delivered.slice(0, 6)) one.push(...ids);
  for (const ids of delivered.slice(6)) two.push(...ids);
  const [first, second] = await world.deliver({
    from: 'c@sender.test',
    to: ['inbox@one.test', 'sales@two.test'],
    subject: 'Both',
    text: 'z',
  });
  one.push(first!);
  two.push(second!);
  const raw = await readFile(join(import.meta.dirname, '..', 'fixtures', 'mime', 'broken-boundary.eml'));
  [broken] = await world.deliver({ from: 'broken@sender.test', to: 'inbox@one.test', raw });
});
after(() => world.close());

describe('stored counts of unsearched lists', () => {
  test('after ingest: one email per recipient, by domain and parse status, all unread', async () => {
    assert.deepEqual(
      await totals(),
      expected({
        default: 13,
        'includeArchived=true': 13,
        'domain=one.test': 8,
        'domain=two.test': 5,
        'domain=two.test&includeArchived=true': 5,
        'domain=all': 13,
        'status=processed': 12,
        'status=failed': 1,
        'e2 all': 13,
        'e2 unread': 13,
        'e2 delivered': 12,
        'e2 failed': 1,
      }),
    );
  });

  test('a read, archive and unarchive through PATCH and GET move emails between the counts', async () => {
    assert.equal((await world.api.get(`/api/v2/mail/${one[0]}`)).status, 200);
    assert.equal((await world.api.get(`/api/v2/mail/${one[0]}`)).status, 200);
    assert.equal((await world.api.patch(`/api/v2/mail/${broken}`, { isRead: true, isArchived: true })).status, 200);
    assert.equal((await world.api.patch(`/api/v2/mail/${two[0]}`, { isArchived: true })).status, 200);
    assert.equal((await world.api.patch(`/api/v2/mail/${two[1]}`, { isArchived: true })).status, 200);
    assert.equal((await world.api.patch(`/api/v2/mail/${two[1]}`, { isArchived: false })).status, 200);
    assert.deepEqual(
      await totals(),
      expected({
        default: 11,
        'includeArchived=true': 13,
        'domain=one.test': 7,
        'domain=two.test': 4,
        'domain=two.test&includeArchived=true': 5,
        'domain=all': 11,
        'status=processed': 11,
        'status=failed': 0,
        'e2 all': 13,
        'e2 read': 2,
        'e2 unread': 10,
        'e2 archived': 2,
        'e2 delivered': 12,
        'e2 failed': 1,
      }),
    );
  });

  test('bulk updates count each email once, skipping unchanged, repeated, unknown and other accounts ids', async () => {
    const archived = await world.api.post('/api/v2/mail/bulk', {
      emailIds: [one[1], one[2], one[2], two[0], 'email_unknown'],
      updates: { isArchived: true, isRead: true },
    });
    assert.equal(archived.status, 200, JSON.stringify(archived.body));
    const other = apiClient(world.server.baseUrl, await world.server.newAccountKey('other'));
    assert.equal((await other.post('/api/v2/mail/bulk', { emailIds: one, updates: { isRead: true } })).status, 200);
    assert.equal((await other.get('/api/v2/mail')).body.pagination.total, 0);
    assert.deepEqual(
      await totals(),
      expected({
        default: 9,
        'includeArchived=true': 13,
        'domain=one.test': 5,
        'domain=two.test': 4,
        'domain=two.test&includeArchived=true': 5,
        'domain=all': 9,
        'status=processed': 9,
        'status=failed': 0,
        'e2 all': 13,
        'e2 read': 5,
        'e2 unread': 8,
        'e2 archived': 4,
        'e2 delivered': 12,
        'e2 failed': 1,
      }),
    );
    const restored = await world.api.post('/api/v2/mail/bulk', {
      emailIds: [one[1], one[2], two[0], broken],
      updates: { isArchived: false },
    });
    assert.equal(restored.status, 200);
    assert.deepEqual(
      await totals(),
      expected({
        default: 13,
        'includeArchived=true': 13,
        'domain=one.test': 8,
        'domain=two.test': 5,
        'domain=two.test&includeArchived=true': 5,
        'domain=all': 13,
        'status=processed': 12,
        'status=failed': 1,
        'e2 all': 13,
        'e2 read': 5,
        'e2 unread': 8,
        'e2 delivered': 12,
        'e2 failed': 1,
      }),
    );
  });

  test('concurrent ingest and bulk updates leave the counts exact', async () => {
    await Promise.all([
      ...Array.from({ length: 12 }, (_, i) =>
        world.deliver({ from: 'd@sender.test', to: 'inbox@one.test', subject: `Burst ${i}`, text: 'w' }),
      ),
      world.api.post('/api/v2/mail/bulk', { emailIds: one.slice(0, 4), updates: { isArchived: true } }),
      world.api.post('/api/v2/mail/bulk', { emailIds: two.slice(0, 3), updates: { isRead: false } }),
    ]);
    assert.deepEqual(
      await totals(),
      expected({
        default: 21,
        'includeArchived=true': 25,
        'domain=one.test': 16,
        'domain=two.test': 5,
        'domain=two.test&includeArchived=true': 5,
        'domain=all': 21,
        'status=processed': 20,
        'status=failed': 1,
        'e2 all': 25,
        'e2 read': 4,
        'e2 unread': 20,
        'e2 archived': 4,
        'e2 delivered': 24,
        'e2 failed': 1,
      }),
    );
  });

  test('a deleted email leaves the counts (no API deletes mail; an account deletion cascades to its emails)', async () => {
    await world.server.app.database.db.deleteFrom('emails').where('id', 'in', [one[0]!, two[4]!]).execute();
    assert.deepEqual(
      await totals(),
      expected({
        default: 20,
        'includeArchived=true': 23,
        'domain=one.test': 16,
        'domain=two.test': 4,
        'domain=two.test&includeArchived=true': 4,
        'domain=all': 20,
        'status=processed': 19,
        'status=failed': 1,
        'e2 all': 23,
        'e2 read': 3,
        'e2 unread': 19,
        'e2 archived': 3,
        'e2 delivered': 22,
        'e2 failed': 1,
      }),
    );
  });
});
