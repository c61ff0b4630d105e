import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { type DeliveryWorld, routeToWebhook, startDeliveryWorld } from '../delivery/setup.ts';
import { sendMail } from '../helpers/smtp.ts';
import { startWebhookReceiver, type WebhookReceiver } from '../helpers/webhook-receiver.ts';

/**
 * Text bodies in the charsets mail arrives in, sent over SMTP and read back through GET /api/v2/mail/{id} and the
 * `email.received` webhook: each is decoded, or, where its charset cannot say what its bytes are, guessed with the
 * reason in parseError, never turned into U+FFFD without a word.
 */

let world: DeliveryWorld;
let hook: WebhookReceiver;
let address: string;

before(async () => {
  world = await startDeliveryWorld('charsets.test');
  hook = await startWebhookReceiver();
  address = (await routeToWebhook(world, 'Charset', hook.url)).address;
});
after(async () => {
  await hook.close();
  await world.close();
});

/** A one-part message whose body is `body`'s bytes as they are, under `contentType`; SMTP ends it with a line end. */
function message(subject: string, contentType: string, transferEncoding: string, body: Buffer): Buffer {
  const head = [
    'From: a@sender.test',
    `To: ${address}`,
    `Subject: ${subject}`,
    'MIME-Version: 1.0',
    `Content-Type: ${contentType}`,
    `Content-Transfer-Encoding: ${transferEncoding}`,
  ];
  const encoded = transferEncoding === 'base64' ? Buffer.from(`${body.toString('base64')}\r\n`) : body;
  return Buffer.concat([Buffer.from(`${head.join('\r\n')}\r\n\r\n`), encoded]);
}

/** Sends `raw` and returns the stored email's v2 detail and the webhook body its delivery carried. */
async function receive(raw: Buffer) {
  const webhooksBefore = hook.requests.length;
  const sent = await sendMail({ port: world.server.smtpPort, to: address, raw });
  assert.equal(sent.ok, true, sent.response);
  const id = sent.queuedIds[0]!;
  const detail = await world.api.get(`/api/v2/mail/${id}`);
  assert.equal(detail.status, 200);
  await hook.waitForRequests(webhooksBefore + 1);
  const webhook = hook.requests.map((request) => JSON.parse(request.body)).find((body) => body.email.id === id);
  return { detail: detail.body, webhook };
}

const bytes = (hex: string) => Buffer.from(hex.replace(/\s+/g, ''), 'hex');

const decoded: Array<[string, string, string, Buffer, string]> = [
  // こんにちは in JIS X 0208 between ESC $ B and ESC ( B.
  [
    'ISO-2022-JP',
    'text/plain; charset=ISO-2022-JP',
    '7bit',
    bytes('1b2442 2433 2473 244b 2441 244f 1b2842'),
    'こんにちは\n',
  ],
  ['Shift_JIS', 'text/plain; charset=Shift_JIS', '8bit', bytes('93fa 967b 8cea'), '日本語\n'],
  ['GB18030', 'text/plain; charset=GB18030', '8bit', bytes('d6d0 cec4 20 a2e3'), '中文 €\n'],
  [
    'windows-1252',
    'text/plain; charset=windows-1252',
    '8bit',
    bytes('93 73 6d 61 72 74 94 20 80 35 20 63 61 66 e9'),
    '“smart” €5 café\n',
  ],
  ['KOI8-R', 'text/plain; charset=KOI8-R', '8bit', bytes('f0 d2 c9 d7 c5 d4'), 'Привет\n'],
  ['UTF-16 with a BOM', 'text/plain; charset=UTF-16', 'base64', bytes('fffe 4800 6900 2000 164e 4c75'), 'Hi 世界'],
  ['UTF-8 without a charset', 'text/plain', '8bit', Buffer.from('Grüße'), 'Grüße\n'],
];

describe('text bodies by charset', () => {
  for (const [name, contentType, transferEncoding, body, text] of decoded) {
    test(`${name} is decoded in the API and the webhook, and the parse succeeds`, async () => {
      const { detail, webhook } = await receive(message(name, contentType, transferEncoding, body));
      assert.equal(detail.content.textBody, text);
      assert.deepEqual([detail.metadata.parseSuccess, detail.metadata.parseError], [true, null]);
      assert.equal(webhook.email.parsedData.textBody, text);
    });
  }

  test('an unknown charset is read as windows-1252 when its bytes are not UTF-8, and parseError says so', async () => {
    const { detail, webhook } = await receive(
      message('martian', 'text/plain; charset=x-martian', '8bit', bytes('63 61 66 e9 20 6e 61 ef 76 65')),
    );
    assert.equal(detail.content.textBody, 'café naïve\n');
    assert.deepEqual(
      [detail.metadata.parseSuccess, detail.metadata.parseError],
      [false, 'Unknown charset "x-martian": text read as windows-1252'],
    );
    assert.equal(webhook.email.parsedData.textBody, 'café naïve\n');
    const list = await world.api.get('/api/v2/mail?status=failed&search=martian');
    assert.deepEqual(
      list.body.emails.map((email: { parseError: string }) => email.parseError),
      ['Unknown charset "x-martian": text read as windows-1252'],
    );
  });

  test('an unknown charset over UTF-8 bytes is read as UTF-8, and parseError says so', async () => {
    const { detail } = await receive(
      message('martian utf-8', 'text/plain; charset=x-martian', '8bit', Buffer.from('½ €')),
    );
    assert.equal(detail.content.textBody, '½ €\n');
    assert.deepEqual(
      [detail.metadata.parseSuccess, detail.metadata.parseError],
      [false, 'Unknown charset "x-martian": text read as UTF-8'],
    );
  });

  test('an unknown charset over ASCII text loses nothing, and the parse succeeds', async () => {
    const { detail } = await receive(
      message('martian ascii', 'text/plain; charset=x-martian', '7bit', Buffer.from('plain')),
    );
    assert.equal(detail.content.textBody, 'plain\n');
    assert.deepEqual([detail.metadata.parseSuccess, detail.metadata.parseError], [true, null]);
  });

  for (const contentType of ['text/plain', 'text/plain; charset=us-ascii']) {
    test(`8-bit bytes that are not UTF-8 under "${contentType}" are read as windows-1252, and parseError says so`, async () => {
      const { detail, webhook } = await receive(
        message(`undeclared ${contentType}`, contentType, '8bit', bytes('63 61 66 e9 20 80')),
      );
      assert.equal(detail.content.textBody, 'café €\n');
      assert.deepEqual(
        [detail.metadata.parseSuccess, detail.metadata.parseError],
        [false, 'Text without a charset has 8-bit bytes: read as windows-1252'],
      );
      assert.equal(webhook.email.parsedData.textBody, 'café €\n');
    });
  }

  test('HTML in an unknown charset is read the same way', async () => {
    const { detail } = await receive(
      message('martian html', 'text/html; charset=x-martian', '8bit', bytes('3c 70 3e 63 61 66 e9 3c 2f 70 3e')),
    );
    assert.equal(detail.content.htmlBody, '<p>café</p>\n');
    assert.equal(detail.metadata.parseError, 'Unknown charset "x-martian": text read as windows-1252');
  });
});
