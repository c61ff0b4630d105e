import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { type ApiClient, apiClient } from '../helpers/http.ts';
import { type MailWorld, rawMessage, startMailWorld } from './setup.ts';

let world: MailWorld;
let api: ApiClient;
const ids: Record<'invoice' | 'htmlOnly' | 'sales' | 'long', string> = {} as never;

const HTML_ONLY = `<html><head><style>p { color: red }</style><title>ignored</title></head>
<body><p onclick="steal()">Hello&nbsp;<b>world</b> &amp; friends</p><script>alert(1)</script>
<a href="javascript:alert(2)">link</a><img src="cid:logo@x" alt="logo"></body></html>`;
const LONG_TEXT = `${'word '.repeat(30)}\n\n${'tail '.repeat(40)}`;

const listIds = (body: { emails: Array<{ id: string }> }) => body.emails.map((email) => email.id);

before(async () => {
  world = await startMailWorld(['inbox@alpha.test', 'sales@beta.test', 'post@bücher.test']);
  api = world.api;
  [ids.invoice] = await world.deliver({
    from: 'alice@sender.test',
    to: 'inbox@alpha.test',
    raw: rawMessage(
      {
        From: 'Alice Example <alice@sender.test>',
        To: 'inbox@alpha.test, Dan Example <dan@to.test>',
        Bcc: 'erin@bcc.test',
        Subject: 'Quarterly invoice',
        'Message-ID': '<invoice-1@sender.test>',
        Date: 'Mon, 02 Mar 2026 10:00:00 +0000',
        'Content-Type': 'text/plain; charset=utf-8',
      },
      'Please find the invoice attached.\n',
    ),
  });
  [ids.htmlOnly] = await world.deliver({
    from: 'bob@sender.test',
    to: 'inbox@alpha.test',
    subject: '',
    html: HTML_ONLY,
  });
  [ids.sales] = await world.deliver({
    from: 'bob@sender.test',
    to: 'sales@beta.test',
    subject: 'Pricing question',
    text: 'How much?',
    headers: { Cc: 'carol@cc.test' },
  });
  [ids.long] = await world.deliver({
    from: 'dave@sender.test',
    to: 'inbox@alpha.test',
    subject: 'Long',
    text: LONG_TEXT,
  });
});
after(() => world.close());

describe('GET /api/v2/mail', () => {
  test('lists newest first with the spec item shape, pagination and uniqueDomains', async () => {
    const response = await api.get('/api/v2/mail');
    assert.equal(response.status, 200);
    assert.deepEqual(listIds(response.body), [ids.long, ids.sales, ids.htmlOnly, ids.invoice]);
    assert.deepEqual(response.body.pagination, { total: 4, limit: 50, offset: 0, hasMore: false, totalIsExact: true });
    assert.deepEqual(response.body.filters, { uniqueDomains: ['alpha.test', 'beta.test'] });
    const invoice = response.body.emails[3];
    assert.deepEqual(Object.keys(invoice).sort(), [
      'archivedAt',
      'attachmentCount',
      'createdAt',
      'emailId',
      'from',
      'fromName',
      'hasAttachments',
      'id',
      'isArchived',
      'isRead',
      'messageId',
      'parseError',
      'parseSuccess',
      'preview',
      'readAt',
      'receivedAt',
      'recipient',
      'subject',
    ]);
    assert.equal(invoice.emailId, ids.invoice);
    assert.equal(invoice.subject, 'Quarterly invoice');
    assert.equal(invoice.from, 'alice@sender.test');
    assert.equal(invoice.fromName, 'Alice Example');
    assert.equal(invoice.recipient, 'inbox@alpha.test');
    assert.equal(invoice.preview, 'Please find the invoice attached.');
    assert.equal(invoice.isRead, false);
    assert.equal(invoice.readAt, null);
    assert.equal(invoice.isArchived, false);
    assert.equal(invoice.hasAttachments, false);
    assert.equal(invoice.attachmentCount, 0);
    assert.equal(invoice.parseSuccess, true);
    assert.equal(invoice.parseError, null);
  });

  test('subject is `No Subject` when empty; preview of HTML-only mail drops head, style, script and markup', async () => {
    const response = await api.get(`/api/v2/mail?emailId=${ids.htmlOnly}`);
    const [item] = response.body.emails;
    assert.equal(item.subject, 'No Subject');
    assert.equal(item.preview, 'Hello world & friends link');
  });

  test('preview is the first 200 characters of the text, whitespace runs collapsed', async () => {
    const response = await api.get(`/api/v2/mail?emailId=${ids.long}`);
    const expected = LONG_TEXT.replace(/\s+/g, ' ').trim().slice(0, 200);
    assert.equal(response.body.emails[0].preview, expected);
    assert.equal(response.body.emails[0].preview.length, 200);
  });

  test('limit 1 pages with hasMore; offset as a string; limit 100 is allowed', async () => {
    const first = await api.get('/api/v2/mail?limit=1');
    assert.deepEqual(listIds(first.body), [ids.long]);
    assert.deepEqual(first.body.pagination, { total: 4, limit: 1, offset: 0, hasMore: true, totalIsExact: true });
    const last = await api.get('/api/v2/mail?limit=1&offset=3');
    assert.deepEqual(listIds(last.body), [ids.invoice]);
    assert.equal(last.body.pagination.hasMore, false);
    const beyond = await api.get('/api/v2/mail?limit=2&offset=10');
    assert.deepEqual(beyond.body.emails, []);
    assert.deepEqual(beyond.body.pagination, { total: 4, limit: 2, offset: 10, hasMore: false, totalIsExact: true });
    const hundred = await api.get('/api/v2/mail?limit=100');
    assert.equal(hundred.body.emails.length, 4);
  });

  for (const [query, error] of [
    ['limit=0', 'Limit must be between 1 and 100'],
    ['limit=101', 'Limit must be between 1 and 100'],
    ['limit=-5', 'Limit must be between 1 and 100'],
    ['offset=-1', 'Offset must be non-negative'],
    [
      'emailAddress=inbox@alpha.test&emailId=email_x',
      'Cannot filter by both emailAddress and emailId at the same time',
    ],
  ] as const) {
    test(`400 \`${error}\` for ${query}`, async () => {
      const response = await api.get(`/api/v2/mail?${query}`);
      assert.equal(response.status, 400);
      assert.deepEqual(response.body, { error });
    });
  }

  test('400 when limit is not a number or a filter value is not allowed', async () => {
    for (const [query, error] of [
      ['limit=ten', 'Invalid request: querystring/limit must be integer'],
      ['status=bogus', 'Invalid request: querystring/status must be equal to constant'],
      ['timeRange=1y', 'Invalid request: querystring/timeRange must be equal to constant'],
      ['includeArchived=maybe', 'Invalid request: querystring/includeArchived must be boolean'],
    ]) {
      const response = await api.get(`/api/v2/mail?${query}`);
      assert.deepEqual([response.status, response.body], [400, { error }], query);
    }
  });

  test('401 `Invalid or missing API key` without a key or with a wrong one', async () => {
    for (const [client, detail] of [
      [apiClient(world.server.baseUrl), 'Missing Authorization header: send Authorization: Bearer <key>'],
      [apiClient(world.server.baseUrl, 'mr_wrong_key'), 'Unknown or revoked API key'],
    ] as const) {
      const response = await client.get('/api/v2/mail');
      assert.equal(response.status, 401);
      assert.deepEqual(response.body, { error: 'Invalid or missing API key', detail });
    }
  });

  test('domain filters by the receiving domain; `all` and an unknown domain', async () => {
    const alpha = await api.get('/api/v2/mail?domain=alpha.test');
    assert.deepEqual(listIds(alpha.body), [ids.long, ids.htmlOnly, ids.invoice]);
    const beta = await api.get('/api/v2/mail?domain=BETA.test');
    assert.deepEqual(listIds(beta.body), [ids.sales]);
    const all = await api.get('/api/v2/mail?domain=all');
    assert.equal(all.body.pagination.total, 4);
    const unknown = await api.get('/api/v2/mail?domain=nowhere.test');
    assert.deepEqual(unknown.body.emails, []);
    assert.equal(unknown.body.pagination.total, 0);
  });

  test('emailAddress matches From, To, Cc and Bcc exactly, case-insensitively', async () => {
    const cases: Array<[string, string[]]> = [
      ['carol@cc.test', [ids.sales]],
      ['Dan@To.test', [ids.invoice]],
      ['erin@bcc.test', [ids.invoice]],
      ['ALICE@sender.test', [ids.invoice]],
      ['bob@sender.test', [ids.sales, ids.htmlOnly]],
      ['inbox@alpha.test', [ids.long, ids.htmlOnly, ids.invoice]],
      ['alice@sender.tes', []],
      ['sender.test', []],
    ];
    for (const [address, expected] of cases) {
      const response = await api.get(`/api/v2/mail?emailAddress=${encodeURIComponent(address)}`);
      assert.deepEqual(listIds(response.body), expected, address);
    }
  });

  test('status: processed lists parsed mail, failed lists none of it, all lists everything', async () => {
    assert.equal((await api.get('/api/v2/mail?status=processed')).body.pagination.total, 4);
    assert.equal((await api.get('/api/v2/mail?status=failed')).body.pagination.total, 0);
    assert.equal((await api.get('/api/v2/mail?status=all')).body.pagination.total, 4);
  });

  test('timeRange 24h, 7d, 30d and 90d all hold mail received just now', async () => {
    for (const range of ['24h', '7d', '30d', '90d']) {
      const response = await api.get(`/api/v2/mail?timeRange=${range}`);
      assert.equal(response.body.pagination.total, 4, range);
    }
  });

  test('search matches subject, sender and recipient case-insensitively', async () => {
    const cases: Array<[string, string[]]> = [
      ['QUARTERLY', [ids.invoice]],
      ['alice', [ids.invoice]],
      ['sales', [ids.sales]],
      ['sales@beta.test', [ids.sales]],
      ['pricing question', [ids.sales]],
    ];
    for (const [search, expected] of cases) {
      const response = await api.get(`/api/v2/mail?search=${encodeURIComponent(search)}`);
      assert.deepEqual(listIds(response.body), expected, search);
    }
  });

  test('400 for an unreadable date in search', async () => {
    const response = await api.get('/api/v2/mail?search=before:yesterday');
    assert.equal(response.status, 400);
    assert.deepEqual(response.body, { error: 'Invalid date in search: before:yesterday (use YYYY-MM-DD)' });
  });

  test('another account sees none of this mail', async () => {
    const other = apiClient(world.server.baseUrl, await world.server.newAccountKey('other-list'));
    const response = await other.get('/api/v2/mail');
    assert.deepEqual(response.body.emails, []);
    assert.deepEqual(response.body.filters, { uniqueDomains: [] });
  });
});

describe('read and archive state', () => {
  test('GET /api/v2/mail/{id} marks the email read; the list then shows isRead and readAt', async () => {
    const read = await api.get(`/api/v2/mail/${ids.sales}`);
    assert.equal(read.status, 200);
    assert.equal(read.body.isRead, true);
    assert.match(read.body.readAt, /^\d{4}-\d{2}-\d{2}T/);
    assert.equal(read.body.updatedAt, read.body.readAt);
    const listed = await api.get(`/api/v2/mail?emailId=${ids.sales}`);
    assert.equal(listed.body.emails[0].isRead, true);
    assert.equal(listed.body.emails[0].readAt, read.body.readAt);
    const again = await api.get(`/api/v2/mail/${ids.sales}`);
    assert.equal(again.body.readAt, read.body.readAt);
  });

  test('PATCH isRead false clears readAt; isArchived hides the email unless includeArchived', async () => {
    const unread = await api.patch(`/api/v2/mail/${ids.sales}`, { isRead: false });
    assert.equal(unread.status, 200);
    assert.equal(unread.body.isRead, false);
    assert.equal(unread.body.readAt, null);

    const archived = await api.patch(`/api/v2/mail/${ids.long}`, { isArchived: true });
    assert.equal(archived.body.isArchived, true);
    assert.match(archived.body.archivedAt, /^\d{4}-/);
    const listed = await api.get('/api/v2/mail');
    assert.deepEqual(listIds(listed.body), [ids.sales, ids.htmlOnly, ids.invoice]);
    assert.equal(listed.body.pagination.total, 3);
    const withArchived = await api.get('/api/v2/mail?includeArchived=true');
    assert.deepEqual(listIds(withArchived.body), [ids.long, ids.sales, ids.htmlOnly, ids.invoice]);
    assert.equal(withArchived.body.emails[0].isArchived, true);

    const restored = await api.patch(`/api/v2/mail/${ids.long}`, { isArchived: false });
    assert.equal(restored.body.archivedAt, null);
    assert.equal((await api.get('/api/v2/mail')).body.pagination.total, 4);
  });

  for (const [body, error] of [
    [{ isRead: 'yes' }, 'isRead must be a boolean'],
    [{ isArchived: 1 }, 'isArchived must be a boolean'],
    [{}, 'At least one of isRead or isArchived must be provided'],
  ] as const) {
    test(`PATCH /api/v2/mail/{id}: 400 \`${error}\``, async () => {
      const response = await api.patch(`/api/v2/mail/${ids.invoice}`, body);
      assert.equal(response.status, 400);
      assert.deepEqual(response.body, { error });
    });
  }

  test('PATCH and GET: 404 `Email not found` for unknown or foreign ids, 400 for an invalid id', async () => {
    assert.deepEqual((await api.patch('/api/v2/mail/email_unknown', { isRead: true })).body, {
      error: 'Email not found',
    });
    const other = apiClient(world.server.baseUrl, await world.server.newAccountKey('other-read'));
    const foreign = await other.get(`/api/v2/mail/${ids.invoice}`);
    assert.equal(foreign.status, 404);
    assert.deepEqual(foreign.body, { error: 'Email not found' });
    const invalid = await api.get('/api/v2/mail/not%20an%20id');
    assert.equal(invalid.status, 400);
    assert.deepEqual(invalid.body, { error: 'Valid email ID is required' });
    const unread = await api.get(`/api/v2/mail?emailId=${ids.invoice}`);
    assert.equal(unread.body.emails[0].isRead, false);
  });

  test('GET /api/v2/mail/{id} without a key: 401 `Unauthorized`', async () => {
    const response = await apiClient(world.server.baseUrl).get(`/api/v2/mail/${ids.invoice}`);
    assert.equal(response.status, 401);
    assert.deepEqual(response.body, {
      error: 'Unauthorized',
      detail: 'Missing Authorization header: send Authorization: Bearer <key>',
    });
  });

  test('POST /api/v2/mail/bulk updates the account own emails and skips unknown ones', async () => {
    const response = await api.post('/api/v2/mail/bulk', {
      emailIds: [ids.invoice, ids.htmlOnly, 'email_unknown'],
      updates: { isRead: true, isArchived: true },
    });
    assert.equal(response.status, 200);
    assert.deepEqual(response.body, {
      updatedCount: 2,
      emails: [
        { id: ids.invoice, isRead: true, isArchived: true },
        { id: ids.htmlOnly, isRead: true, isArchived: true },
      ],
    });
    assert.deepEqual(listIds((await api.get('/api/v2/mail')).body), [ids.long, ids.sales]);
    const undo = await api.post('/api/v2/mail/bulk', {
      emailIds: [ids.invoice, ids.htmlOnly],
      updates: { isRead: false, isArchived: false },
    });
    assert.equal(undo.body.updatedCount, 2);
    assert.equal((await api.get('/api/v2/mail')).body.pagination.total, 4);
  });

  for (const [body, error] of [
    [{ emailIds: [], updates: { isRead: true } }, 'emailIds must be a non-empty array of strings'],
    [{ updates: { isRead: true } }, 'emailIds must be a non-empty array of strings'],
    [
      { emailIds: Array.from({ length: 101 }, (_, i) => `email_${i}`), updates: { isRead: true } },
      'Cannot update more than 100 emails at once',
    ],
    [{ emailIds: ['email_x'], updates: {} }, 'At least one of isRead or isArchived must be provided'],
    [{ emailIds: ['email_x'], updates: { isArchived: 'no' } }, 'isArchived must be a boolean'],
  ] as const) {
    test(`POST /api/v2/mail/bulk: 400 \`${error}\``, async () => {
      const response = await api.post('/api/v2/mail/bulk', body);
      assert.equal(response.status, 400);
      assert.deepEqual(response.body, { error });
    });
  }
});

describe('GET /api/v2/domains/{id} stats', () => {
  test('emailsLast24h/7d/30d count the domain received mail', async () => {
    const domains = await api.get('/api/v2/domains');
    const alpha = domains.body.data.find((domain: { domain: string }) => domain.domain === 'alpha.test');
    const detail = await api.get(`/api/v2/domains/${alpha.id}`);
    assert.equal(detail.body.stats.emailsLast24h, 3);
    assert.equal(detail.body.stats.emailsLast7d, 3);
    assert.equal(detail.body.stats.emailsLast30d, 3);
  });
});

describe('internationalized domain names in the list', () => {
  test('domain= finds the mail of an IDN domain by its Unicode name as by its ASCII one (v2 and e2)', async () => {
    const [id] = await world.deliver({ to: 'post@xn--bcher-kva.test', subject: 'Bücher' });
    for (const name of ['xn--bcher-kva.test', 'bücher.test', 'BÜCHER.test']) {
      const v2 = await api.get(`/api/v2/mail?domain=${encodeURIComponent(name)}`);
      assert.deepEqual(listIds(v2.body), [id], name);
      const e2 = await api.get(`/api/e2/emails?domain=${encodeURIComponent(name)}`);
      assert.deepEqual(
        e2.body.data.map((email: { id: string }) => email.id),
        [id],
        name,
      );
    }
  });
});
