import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { type ApiClient, apiClient } from '../helpers/http.ts';
import { type MailWorld, rawMessage, startMailWorld } from './setup.ts';

let world: MailWorld;
let api: ApiClient;
let richId: string;
let bigId: string;

const RICH = rawMessage(
  {
    From: '"Alice Example" <alice@sender.test>',
    To: 'Inbox <inbox@detail.test>, other@elsewhere.test',
    Cc: 'carol@cc.test',
    'Reply-To': 'replies@sender.test',
    Subject: 'Detail check',
    'Message-ID': '<rich-1@sender.test>',
    'In-Reply-To': '<parent@sender.test>',
    References: '<root@sender.test> <parent@sender.test>',
    Date: 'Tue, 03 Mar 2026 09:30:00 +0000',
    'X-Priority': '1',
    'Content-Type': 'multipart/alternative; boundary="b1"',
  },
  [
    '--b1',
    'Content-Type: text/plain; charset=utf-8',
    '',
    'Plain body',
    '--b1',
    'Content-Type: text/html; charset=utf-8',
    '',
    '<p onclick="x()">Rich <b>body</b></p><script>alert(1)</script><a href="javascript:alert(2)">go</a><img src="cid:logo@x" onerror="y()">',
    '--b1--',
    '',
  ].join('\n'),
);

before(async () => {
  world = await startMailWorld(['inbox@detail.test']);
  api = world.api;
  [richId] = await world.deliver({ from: 'alice@sender.test', to: 'inbox@detail.test', raw: RICH });
  [bigId] = await world.deliver({
    from: 'big@sender.test',
    to: 'inbox@detail.test',
    subject: 'Big one',
    text: `${'0123456789'.repeat(10)}\n`.repeat(11_000),
  });
});
after(() => world.close());

describe('GET /api/v2/mail/{id}', () => {
  test('answers every field of the spec detail, with textBody, htmlBody and attachments also at the top level', async () => {
    const response = await api.get(`/api/v2/mail/${richId}`);
    assert.equal(response.status, 200);
    const email = response.body;
    assert.equal(email.id, richId);
    assert.equal(email.emailId, richId);
    assert.equal(email.messageId, '<rich-1@sender.test>');
    assert.equal(email.subject, 'Detail check');
    assert.equal(email.from, 'alice@sender.test');
    assert.equal(email.fromName, 'Alice Example');
    assert.equal(email.to, '"Inbox" <inbox@detail.test>, other@elsewhere.test');
    assert.equal(email.cc, 'carol@cc.test');
    assert.equal(email.bcc, null);
    assert.equal(email.replyTo, 'replies@sender.test');
    assert.equal(email.recipient, 'inbox@detail.test');
    assert.equal(email.isRead, true);
    assert.equal(email.textBody, 'Plain body');
    assert.equal(email.content.textBody, 'Plain body');
    assert.equal(email.htmlBody, '<p>Rich <b>body</b></p><a>go</a><img src="cid:logo@x" />');
    assert.equal(email.content.htmlBody, email.htmlBody);
    assert.deepEqual(email.attachments, []);
    assert.deepEqual(email.content.attachments, []);
    assert.equal(email.content.rawContentOmitted, false);
    assert.match(email.content.rawContent, /\r\nSubject: Detail check\r\n/);
    assert.equal(email.content.headers.subject, 'Detail check');
    assert.equal(email.content.headers['x-priority'], '1');
    assert.deepEqual(email.addresses.from, {
      text: '"Alice Example" <alice@sender.test>',
      addresses: [{ address: 'alice@sender.test', name: 'Alice Example' }],
    });
    assert.deepEqual(email.addresses.to.addresses, [
      { address: 'inbox@detail.test', name: 'Inbox' },
      { address: 'other@elsewhere.test', name: null },
    ]);
    assert.equal(email.addresses.bcc, null);
    assert.deepEqual(email.metadata, {
      inReplyTo: '<parent@sender.test>',
      references: ['<root@sender.test>', '<parent@sender.test>'],
      priority: 'high',
      parseSuccess: true,
      parseError: null,
      hasAttachments: false,
      attachmentCount: 0,
      hasTextBody: true,
      hasHtmlBody: true,
    });
    assert.deepEqual(Object.keys(email.security).sort(), ['dkim', 'dmarc', 'spam', 'spf', 'virus']);
    assert.equal(email.processing.actionType, 'store');
    assert.equal(email.processing.s3Info.contentFetched, true);
    assert.equal(email.processing.s3Info.contentSize, Buffer.byteLength(email.content.rawContent));
    assert.equal(email.processing.s3Info.error, null);
    assert.deepEqual(email.processing.commonHeaders, {
      from: ['"Alice Example" <alice@sender.test>'],
      to: ['inbox@detail.test', 'other@elsewhere.test'],
      messageId: '<rich-1@sender.test>',
      subject: 'Detail check',
    });
  });

  test('a message without Message-ID, In-Reply-To or priority: strings where the spec types strings, never null', async () => {
    const [bareId] = await world.deliver({
      from: 'bare@sender.test',
      to: 'inbox@detail.test',
      raw: 'From: bare@sender.test\r\nTo: inbox@detail.test\r\nSubject: Bare\r\n\r\nNothing else.\r\n',
    });
    const { body } = await api.get(`/api/v2/mail/${bareId}`);
    assert.deepEqual(
      [body.messageId, body.metadata.inReplyTo, body.metadata.priority, body.processing.commonHeaders.messageId],
      ['', '', 'normal', ''],
    );
    const listed = (await api.get('/api/v2/mail?search=Bare')).body.emails;
    assert.deepEqual(
      listed.map((email: { id: string; messageId: string }) => [email.id, email.messageId]),
      [[bareId, '']],
    );
  });

  test('GET /api/v2/mail/{id}/raw streams the raw message byte for byte', async () => {
    const detail = await api.get(`/api/v2/mail/${richId}`);
    const raw = await fetch(`${world.server.baseUrl}/api/v2/mail/${richId}/raw`, {
      headers: { authorization: `Bearer ${world.server.apiKey}` },
    });
    assert.equal(raw.status, 200);
    assert.equal(raw.headers.get('content-type'), 'message/rfc822');
    assert.equal(await raw.text(), detail.body.content.rawContent);
  });

  test('rawContent is omitted, with rawContentOmitted true, above 1 MiB; /raw still serves it', async () => {
    const detail = await api.get(`/api/v2/mail/${bigId}`);
    assert.equal(detail.body.content.rawContentOmitted, true);
    assert.equal('rawContent' in detail.body.content, false);
    assert.equal(detail.body.processing.s3Info.contentFetched, false);
    const raw = await fetch(`${world.server.baseUrl}/api/v2/mail/${bigId}/raw`, {
      headers: { authorization: `Bearer ${world.server.apiKey}` },
    });
    const bytes = Buffer.from(await raw.arrayBuffer());
    assert.equal(bytes.length, detail.body.processing.s3Info.contentSize);
    assert.ok(bytes.length > 1024 * 1024);
  });

  test('another account gets 404 `Email not found` for the raw message', async () => {
    const other = apiClient(world.server.baseUrl, await world.server.newAccountKey('other-raw'));
    const response = await other.get(`/api/v2/mail/${richId}/raw`);
    assert.equal(response.status, 404);
    assert.deepEqual(response.body, { error: 'Email not found' });
  });
});

describe('GET /api/v2/mail/{id}/html', () => {
  test('answers the HTML body as received, before sanitizing, and changes nothing of the email', async () => {
    const state = async () => {
      const { isRead, readAt, updatedAt } = (await api.get(`/api/v2/mail?emailId=${richId}`)).body.emails[0];
      return { isRead, readAt, updatedAt };
    };
    const before = await state();
    const response = await api.get(`/api/v2/mail/${richId}/html`);
    assert.equal(response.status, 200);
    assert.equal(response.headers.get('content-type'), 'application/json; charset=utf-8');
    assert.deepEqual(response.body, {
      html: '<p onclick="x()">Rich <b>body</b></p><script>alert(1)</script><a href="javascript:alert(2)">go</a><img src="cid:logo@x" onerror="y()">',
    });
    assert.deepEqual(await state(), before);
  });

  test('html is null for a message without an HTML body', async () => {
    assert.deepEqual((await api.get(`/api/v2/mail/${bigId}/html`)).body, { html: null });
  });

  test("another account's email, and an id that is none, are refused", async () => {
    const other = apiClient(world.server.baseUrl, await world.server.newAccountKey('other-html'));
    const response = await other.get(`/api/v2/mail/${richId}/html`);
    assert.deepEqual([response.status, response.body], [404, { error: 'Email not found' }]);
    const invalid = await api.get('/api/v2/mail/not%20an%20id/html');
    assert.deepEqual([invalid.status, invalid.body], [400, { error: 'Valid email ID is required' }]);
  });
});

describe('POST /api/v2/mail (reply placeholder)', () => {
  test('answers pending_implementation with the reply data and sends nothing', async () => {
    const response = await api.post('/api/v2/mail', {
      emailId: richId,
      to: 'alice@sender.test',
      subject: 'Re: Detail check',
      textBody: 'Thanks',
      attachments: [{ filename: 'a.txt', contentType: 'text/plain', content: 'aGk=' }],
    });
    assert.equal(response.status, 200);
    assert.deepEqual(response.body, {
      message: 'Reply validated. Sending replies is not implemented yet; nothing was sent.',
      originalEmailId: richId,
      replyData: {
        to: 'alice@sender.test',
        subject: 'Re: Detail check',
        hasTextBody: true,
        hasHtmlBody: false,
        attachmentCount: 1,
      },
      status: 'pending_implementation',
    });
  });

  test('415 unless the body is application/json', async () => {
    for (const raw of [new URLSearchParams({ emailId: richId }), 'emailId=x']) {
      const response = await api.post('/api/v2/mail', undefined, {
        raw,
        headers: typeof raw === 'string' ? { 'content-type': 'text/plain' } : {},
      });
      assert.equal(response.status, 415);
      assert.deepEqual(response.body, { error: 'Content-Type must be application/json' });
    }
  });

  const valid = { to: 'alice@sender.test', subject: 'Re', textBody: 'x' };
  for (const [body, status, error] of [
    [{ ...valid }, 400, 'emailId is required'],
    [{ emailId: 'email_x', subject: 'Re', textBody: 'x' }, 400, 'to and subject are required'],
    [{ emailId: 'email_x', to: 'alice@sender.test', textBody: 'x' }, 400, 'to and subject are required'],
    [
      { emailId: 'email_x', to: 'not-an-address', subject: 'Re', textBody: 'x' },
      400,
      'Invalid email format for to field',
    ],
    [
      { emailId: 'email_x', to: 'alice@sender.test', subject: 'Re' },
      400,
      'Either textBody or htmlBody must be provided',
    ],
    [{ emailId: 'email_unknown', ...valid }, 404, 'Original email not found'],
    ...[[1, null], [{}], [{ filename: 'a.txt', content: [] }], [{ filename: 'a.txt', content: 'not base64!' }]].map(
      (attachments) =>
        [
          { emailId: 'email_x', ...valid, attachments },
          400,
          'Each attachment needs a filename and its content as base64 text (or a path)',
        ] as const,
    ),
  ] as const) {
    test(`${status} \`${error}\``, async () => {
      const response = await api.post('/api/v2/mail', body);
      assert.equal(response.status, status);
      assert.deepEqual(response.body, { error });
    });
  }
});

describe('e2 /emails', () => {
  test('GET /api/e2/emails lists received mail in the snake_case shape with its filters', async () => {
    const response = await api.get('/api/e2/emails?type=received&search=subject:detail');
    assert.equal(response.status, 200);
    assert.equal(response.body.data.length, 1);
    const [item] = response.body.data;
    assert.equal(item.id, richId);
    assert.equal(item.type, 'received');
    assert.equal(item.message_id, '<rich-1@sender.test>');
    assert.equal(item.from, 'alice@sender.test');
    assert.equal(item.from_name, 'Alice Example');
    assert.deepEqual(item.to, ['inbox@detail.test', 'other@elsewhere.test']);
    assert.deepEqual(item.cc, ['carol@cc.test']);
    assert.equal(item.subject, 'Detail check');
    assert.equal(item.preview, 'Plain body');
    assert.equal(item.status, 'delivered');
    assert.equal(item.has_attachments, false);
    assert.equal(item.is_read, true);
    assert.deepEqual(response.body.pagination, {
      limit: 50,
      offset: 0,
      total: 1,
      has_more: false,
      total_is_exact: true,
    });
    assert.deepEqual(response.body.filters, {
      type: 'received',
      status: 'all',
      time_range: 'all',
      search: 'subject:detail',
    });
  });

  test('type=sent and sent-only statuses list nothing; status=unread, address and time_range filter', async () => {
    assert.equal((await api.get('/api/e2/emails?type=sent')).body.pagination.total, 0);
    assert.equal((await api.get('/api/e2/emails?status=bounced')).body.pagination.total, 0);
    // The rich and big messages, and the bare one the detail tests sent.
    assert.equal((await api.get('/api/e2/emails?time_range=1h')).body.pagination.total, 3);
    assert.equal((await api.get('/api/e2/emails?address=carol@cc.test')).body.data[0].id, richId);
    await api.patch(`/api/v2/mail/${bigId}`, { isRead: false });
    const unread = await api.get('/api/e2/emails?status=unread');
    assert.deepEqual(
      unread.body.data.map((item: { id: string }) => item.id),
      [bigId],
    );
    const limited = await api.get('/api/e2/emails?limit=101');
    assert.deepEqual(limited.body, { error: 'Limit must be between 1 and 100' });
  });

  test('GET /api/e2/emails/{id} answers the e2 email object; 404 for another account', async () => {
    const response = await api.get(`/api/e2/emails/${richId}`);
    assert.equal(response.status, 200);
    assert.equal(response.body.object, 'email');
    assert.equal(response.body.type, 'received');
    assert.equal(response.body.text, 'Plain body');
    assert.equal(response.body.html, '<p>Rich <b>body</b></p><a>go</a><img src="cid:logo@x" />');
    assert.deepEqual(response.body.reply_to, ['replies@sender.test']);
    assert.equal(typeof response.body.thread_id, 'string');
    const other = apiClient(world.server.baseUrl, await world.server.newAccountKey('other-e2'));
    assert.deepEqual((await other.get(`/api/e2/emails/${richId}`)).body, { error: 'Email not found' });
  });

  test('PATCH /api/e2/emails/{id} sets is_read / is_archived and answers the e2 email after the change', async () => {
    const read = (await api.get(`/api/e2/emails/${richId}`)).body;
    assert.equal(read.is_read, true);
    const unread = await api.patch(`/api/e2/emails/${richId}`, { is_read: false, is_archived: true });
    assert.equal(unread.status, 200);
    assert.deepEqual(unread.body, { ...read, is_read: false, read_at: null, is_archived: true });
    const unarchived = await api.patch(`/api/e2/emails/${richId}`, { is_archived: false });
    assert.deepEqual(unarchived.body, { ...read, is_read: false, read_at: null, is_archived: false });
    const marked = await api.patch(`/api/e2/emails/${richId}`, { is_read: true });
    assert.deepEqual(marked.body, { ...read, read_at: marked.body.read_at });
    assert.match(marked.body.read_at, /^\d{4}-\d\d-\d\dT/);

    const none = await api.patch(`/api/e2/emails/${richId}`, {});
    assert.equal(none.status, 400);
    assert.deepEqual(none.body, { error: 'At least one of is_read or is_archived must be provided' });
    const wrong = await api.patch(`/api/e2/emails/${richId}`, { is_read: 'maybe' });
    assert.equal(wrong.status, 400);
    assert.deepEqual(wrong.body, { error: 'Invalid request: body/is_read must be boolean' });
    const other = apiClient(world.server.baseUrl, await world.server.newAccountKey('other-patch'));
    const foreign = await other.patch(`/api/e2/emails/${richId}`, { is_read: false });
    assert.equal(foreign.status, 404);
    assert.deepEqual(foreign.body, { error: 'Email not found' });
  });

  test('sending and scheduling answer 501 in both families', async () => {
    for (const [method, path] of [
      ['POST', '/api/e2/emails'],
      ['POST', '/api/v2/emails'],
      ['POST', '/api/e2/emails/schedule'],
      ['GET', '/api/v2/emails/schedule'],
      ['DELETE', '/api/e2/emails/schedule/sched_1'],
      ['DELETE', `/api/e2/emails/${richId}`],
      ['POST', `/api/e2/emails/${richId}/reply`],
      ['GET', `/api/v2/emails/${richId}`],
      ['POST', `/api/v2/emails/${richId}/reply`],
    ] as const) {
      const response = await api.call(method, path, method === 'POST' ? { from: 'a@b.test' } : undefined);
      assert.equal(response.status, 501, `${method} ${path}`);
      assert.equal(response.headers.get('x-should-retry'), 'false');
      assert.deepEqual(response.body, { error: 'Sending is not supported by Mailroom' });
    }
  });
});

describe('raw 8-bit headers', () => {
  /** Subject, From, To, Cc and Reply-To with the name `name`, as the header bytes `encoding` gives it. */
  const eightBit = (name: string, encoding: BufferEncoding, id: string) =>
    Buffer.from(
      rawMessage(
        {
          From: `"${name}" <chef@sender.test>`,
          To: `${name} <inbox@detail.test>`,
          Cc: `"${name}" <cc@sender.test>`,
          'Reply-To': `"${name}" <replies@sender.test>`,
          Subject: name,
          'Message-ID': `<${id}@sender.test>`,
          'Content-Type': 'text/plain; charset=utf-8',
        },
        'Body\n',
      ),
      encoding,
    );

  test('a latin-1 Subject and display names read as latin-1 in the v2 detail, the e2 email and thread and the headers list; UTF-8 and RFC 2047 as before', async () => {
    for (const [label, raw, expected] of [
      ['latin-1', eightBit('Café crème', 'latin1', 'latin1-1'), 'Café crème'],
      ['UTF-8', eightBit('Café crème ☕', 'utf8', 'utf8-1'), 'Café crème ☕'],
      ['RFC 2047', eightBit('=?iso-8859-1?Q?Caf=E9_cr=E8me?=', 'latin1', 'rfc2047-1'), 'Café crème'],
    ] as const) {
      const [id] = await world.deliver({ from: 'chef@sender.test', to: 'inbox@detail.test', raw });
      const { body: detail } = await api.get(`/api/v2/mail/${id}`);
      assert.deepEqual(
        [
          detail.subject,
          detail.fromName,
          detail.content.headers.subject,
          detail.processing.commonHeaders.subject,
          ...['from', 'to', 'cc', 'replyTo'].map((field) => detail.addresses[field].addresses[0].name),
        ],
        Array(8).fill(expected),
        label,
      );
      const { body: email } = await api.get(`/api/e2/emails/${id}`);
      const { body: thread } = await api.get(`/api/e2/mail/threads/${email.thread_id}`);
      assert.deepEqual(
        [email.subject, email.from_name, email.from, thread.messages[0].from],
        [expected, expected, 'chef@sender.test', `"${expected}" <chef@sender.test>`],
        label,
      );
    }
  });
});
