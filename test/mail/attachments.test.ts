import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { type ApiClient, apiClient } from '../helpers/http.ts';
import { type MailWorld, rawMessage, startMailWorld } from './setup.ts';

let world: MailWorld;
let api: ApiClient;
let mixedId: string;
let plainId: string;
let bigId: string;

const LOGO = Buffer.from('89504e470d0a1a0a0000000d49484452', 'hex');
const UNICODE_NAME = 'résumé 日本.pdf';
const BIG_BYTES = 50 * 1024 * 1024;

function part(headers: string[], content: Buffer): string {
  return [
    ...headers,
    'Content-Transfer-Encoding: base64',
    '',
    content.toString('base64').replace(/.{76}/g, '$&\n'),
  ].join('\n');
}

const MIXED = rawMessage(
  {
    From: 'sender@files.test',
    To: 'files@attach.test',
    Subject: 'Files',
    'Message-ID': '<files-1@files.test>',
    'Content-Type': 'multipart/mixed; boundary="mix"',
  },
  [
    '--mix',
    'Content-Type: text/html; charset=utf-8',
    '',
    '<p>See <img src="cid:logo@files.test"></p>',
    '--mix',
    part(
      [
        'Content-Type: image/png; name="logo.png"',
        'Content-ID: <logo@files.test>',
        'Content-Disposition: inline; filename="logo.png"',
      ],
      LOGO,
    ),
    '--mix',
    part(
      [
        `Content-Type: application/pdf; name*=UTF-8''${encodeURIComponent(UNICODE_NAME)}`,
        `Content-Disposition: attachment; filename*=UTF-8''${encodeURIComponent(UNICODE_NAME)}`,
      ],
      Buffer.from('%PDF-1.4 unicode'),
    ),
    '--mix',
    part(
      ['Content-Type: text/plain; name="report.txt"', 'Content-Disposition: attachment; filename="report.txt"'],
      Buffer.from('first report'),
    ),
    '--mix',
    part(
      ['Content-Type: text/plain; name="report.txt"', 'Content-Disposition: attachment; filename="report.txt"'],
      Buffer.from('second report'),
    ),
    '--mix',
    part(['Content-Type: application/octet-stream', 'Content-Disposition: attachment'], Buffer.from([0, 1, 2, 3, 255])),
    '--mix--',
    '',
  ].join('\n'),
);

async function download(path: string, key = world.server.apiKey) {
  const response = await fetch(`${world.server.baseUrl}${path}`, { headers: { authorization: `Bearer ${key}` } });
  return { response, bytes: Buffer.from(await response.arrayBuffer()) };
}

before(async () => {
  world = await startMailWorld(['files@attach.test'], { SMTP_MAX_MESSAGE_BYTES: String(80 * 1024 * 1024) });
  api = world.api;
  [mixedId] = await world.deliver({ from: 'sender@files.test', to: 'files@attach.test', raw: MIXED });
  [plainId] = await world.deliver({
    from: 'sender@files.test',
    to: 'files@attach.test',
    subject: 'No files',
    text: 'x',
  });
});
after(() => world.close());

describe('GET /api/e2/attachments', () => {
  test('the email lists its attachments in MIME order, unnamed and inline ones included', async () => {
    const detail = await api.get(`/api/v2/mail/${mixedId}`);
    assert.deepEqual(detail.body.attachments, [
      { filename: 'logo.png', contentType: 'image/png', size: LOGO.length, contentId: '<logo@files.test>' },
      { filename: UNICODE_NAME, contentType: 'application/pdf', size: 16, contentId: '' },
      { filename: 'report.txt', contentType: 'text/plain', size: 12, contentId: '' },
      { filename: 'report.txt', contentType: 'text/plain', size: 13, contentId: '' },
      { filename: '', contentType: 'application/octet-stream', size: 5, contentId: '' },
    ]);
  });

  test('a unicode filename is served with Content-Type, Content-Length and an RFC 5987 filename*', async () => {
    const { response, bytes } = await download(`/api/e2/attachments/${mixedId}/${encodeURIComponent(UNICODE_NAME)}`);
    assert.equal(response.status, 200);
    assert.equal(bytes.toString(), '%PDF-1.4 unicode');
    assert.equal(response.headers.get('content-type'), 'application/pdf');
    assert.equal(response.headers.get('content-length'), '16');
    assert.equal(
      response.headers.get('content-disposition'),
      `attachment; filename="r_sum_ __.pdf"; filename*=UTF-8''r%C3%A9sum%C3%A9%20%E6%97%A5%E6%9C%AC.pdf`,
    );
  });

  test('a duplicate name serves the first match; parts/{index} reaches the second', async () => {
    const byName = await download(`/api/e2/attachments/${mixedId}/report.txt`);
    assert.equal(byName.bytes.toString(), 'first report');
    const second = await download(`/api/e2/attachments/${mixedId}/parts/3`);
    assert.equal(second.bytes.toString(), 'second report');
    assert.equal(second.response.headers.get('content-type'), 'text/plain');
  });

  test('an unnamed part is served by index, and by the name `attachment` webhooks give it', async () => {
    for (const path of [`/api/e2/attachments/${mixedId}/parts/4`, `/api/e2/attachments/${mixedId}/attachment`]) {
      const { response, bytes } = await download(path);
      assert.equal(response.status, 200, path);
      assert.deepEqual([...bytes], [0, 1, 2, 3, 255]);
      assert.equal(response.headers.get('content-type'), 'application/octet-stream');
      assert.equal(
        response.headers.get('content-disposition'),
        `attachment; filename="attachment-5"; filename*=UTF-8''attachment-5`,
      );
    }
  });

  test('a CID image is served by name and by index, also through /api/v2', async () => {
    for (const path of [`/api/e2/attachments/${mixedId}/logo.png`, `/api/v2/attachments/${mixedId}/parts/0`]) {
      const { response, bytes } = await download(path);
      assert.equal(response.status, 200, path);
      assert.deepEqual(bytes, LOGO);
      assert.equal(response.headers.get('content-type'), 'image/png');
    }
  });

  test('GET /api/e2/attachments/{emailId} lists every part with an id from its index and content hash', async () => {
    const id = (index: number, content: Buffer) =>
      `att_${index}_${createHash('sha256').update(content).digest('hex').slice(0, 12)}`;
    const response = await api.get(`/api/e2/attachments/${mixedId}`);
    assert.equal(response.status, 200);
    assert.deepEqual(response.body, {
      data: [
        {
          id: id(0, LOGO),
          index: 0,
          filename: 'logo.png',
          contentType: 'image/png',
          size: LOGO.length,
          contentId: '<logo@files.test>',
          contentDisposition: 'inline',
        },
        {
          id: id(1, Buffer.from('%PDF-1.4 unicode')),
          index: 1,
          filename: UNICODE_NAME,
          contentType: 'application/pdf',
          size: 16,
          contentId: null,
          contentDisposition: 'attachment',
        },
        {
          id: id(2, Buffer.from('first report')),
          index: 2,
          filename: 'report.txt',
          contentType: 'text/plain',
          size: 12,
          contentId: null,
          contentDisposition: 'attachment',
        },
        {
          id: id(3, Buffer.from('second report')),
          index: 3,
          filename: 'report.txt',
          contentType: 'text/plain',
          size: 13,
          contentId: null,
          contentDisposition: 'attachment',
        },
        {
          id: id(4, Buffer.from([0, 1, 2, 3, 255])),
          index: 4,
          filename: null,
          contentType: 'application/octet-stream',
          size: 5,
          contentId: null,
          contentDisposition: 'attachment',
        },
      ],
    });
    assert.deepEqual((await api.get(`/api/e2/attachments/${mixedId}`)).body, response.body);
    assert.deepEqual((await api.get(`/api/e2/attachments/${plainId}`)).body, { data: [] });
    assert.deepEqual((await api.get('/api/e2/attachments/email_unknown')).body, {
      error: 'Email not found or access denied',
    });
  });

  test('parts/{id} serves the part the listing id names; a wrong hash or index is 404', async () => {
    const [, , , second, unnamed] = (await api.get(`/api/e2/attachments/${mixedId}`)).body.data;
    const bySecond = await download(`/api/e2/attachments/${mixedId}/parts/${second.id}`);
    assert.equal(bySecond.response.status, 200);
    assert.equal(bySecond.bytes.toString(), 'second report');
    const byUnnamed = await download(`/api/v2/attachments/${mixedId}/parts/${unnamed.id}`);
    assert.deepEqual([...byUnnamed.bytes], [0, 1, 2, 3, 255]);
    const hash = second.id.slice(-12);
    for (const wrong of [`att_2_${hash}`, `att_3_000000000000`, `att_9_${hash}`]) {
      const response = await api.get(`/api/e2/attachments/${mixedId}/parts/${wrong}`);
      assert.equal(response.status, 404, wrong);
      assert.deepEqual(response.body, { error: 'Attachment not found' });
    }
  });

  for (const [path, error] of [
    ['/parts/5', 'Attachment not found'],
    ['/parts/01', 'Attachment not found'],
    ['/parts/x', 'Attachment not found'],
    ['/missing.txt', 'Attachment not found'],
  ] as const) {
    test(`404 \`${error}\` for ${path}`, async () => {
      const response = await api.get(`/api/e2/attachments/${mixedId}${path}`);
      assert.equal(response.status, 404);
      assert.deepEqual(response.body, { error });
    });
  }

  test('404 `No attachments found in this email` and `Email not found or access denied`', async () => {
    assert.deepEqual((await api.get(`/api/e2/attachments/${plainId}/parts/0`)).body, {
      error: 'No attachments found in this email',
    });
    assert.deepEqual((await api.get('/api/e2/attachments/email_unknown/parts/0')).body, {
      error: 'Email not found or access denied',
    });
  });

  test('another account gets 404 for the same part; no key gets 401', async () => {
    const otherKey = await world.server.newAccountKey('other-attachments');
    const foreign = await apiClient(world.server.baseUrl, otherKey).get(`/api/e2/attachments/${mixedId}/parts/0`);
    assert.equal(foreign.status, 404);
    assert.deepEqual(foreign.body, { error: 'Email not found or access denied' });
    const anonymous = await apiClient(world.server.baseUrl).get(`/api/e2/attachments/${mixedId}/parts/0`);
    assert.equal(anonymous.status, 401);
  });

  test('a 50 MB attachment streams out byte-exact while the server process grows by less than 64 MB', async () => {
    const content = Buffer.alloc(BIG_BYTES);
    for (let offset = 0; offset < BIG_BYTES; offset += 4) content.writeUInt32LE((offset * 2654435761) >>> 0, offset);
    const expectedHash = createHash('sha256').update(content).digest('hex');
    [bigId] = await world.deliver({
      from: 'sender@files.test',
      to: 'files@attach.test',
      raw: rawMessage(
        {
          From: 'sender@files.test',
          To: 'files@attach.test',
          Subject: 'Big file',
          'Content-Type': 'multipart/mixed; boundary="big"',
        },
        ['--big', part(['Content-Type: application/octet-stream; name="big.bin"'], content), '--big--', ''].join('\n'),
      ),
    });
    globalThis.gc?.();
    const baseline = process.memoryUsage().rss;
    let peak = baseline;
    const response = await fetch(`${world.server.baseUrl}/api/e2/attachments/${bigId}/big.bin`, {
      headers: { authorization: `Bearer ${world.server.apiKey}` },
    });
    assert.equal(response.headers.get('content-length'), String(BIG_BYTES));
    const hash = createHash('sha256');
    let received = 0;
    for await (const chunk of response.body!) {
      hash.update(chunk);
      received += chunk.length;
      peak = Math.max(peak, process.memoryUsage().rss);
    }
    assert.equal(received, BIG_BYTES);
    assert.equal(hash.digest('hex'), expectedHash);
    const growthMb = (peak - baseline) / 1024 / 1024;
    assert.ok(growthMb < 64, `RSS grew by ${growthMb.toFixed(1)} MB`);
  });
});
