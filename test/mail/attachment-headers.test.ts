import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { type MailWorld, rawMessage, startMailWorld } from './setup.ts';

/** Attachment headers a hostile sender controls: the file name and the media type, served in response headers. */
let world: MailWorld;
let emailId: string;

const LONG_STEM = 'a'.repeat(20_000);
const LONG_SUBTYPE = 'x'.repeat(20_000);

function part(headers: string[], content: string): string {
  return [...headers, 'Content-Transfer-Encoding: base64', '', Buffer.from(content).toString('base64'), ''].join('\n');
}

before(async () => {
  world = await startMailWorld(['files@hostile.test']);
  const parts = [
    part(
      [
        "Content-Type: text/plain; name*=UTF-8''evil%0D%0AX-Injected%3A%201.txt",
        "Content-Disposition: attachment; filename*=UTF-8''evil%0D%0AX-Injected%3A%201.txt",
      ],
      'crlf',
    ),
    part(['Content-Type: application/pdf', `Content-Disposition: attachment; filename="${LONG_STEM}.pdf"`], 'long'),
    part([`Content-Type: application/${LONG_SUBTYPE}`, 'Content-Disposition: attachment; filename="type.bin"'], 'type'),
    part(['Content-Type: text/html; name="page.html"', 'Content-Disposition: attachment'], '<script>1</script>'),
  ];
  [emailId] = await world.deliver({
    from: 'sender@elsewhere.test',
    to: 'files@hostile.test',
    raw: rawMessage(
      {
        From: 'sender@elsewhere.test',
        To: 'files@hostile.test',
        Subject: 'Hostile names',
        'Content-Type': 'multipart/mixed; boundary="b"',
      },
      ['--b', 'Content-Type: text/plain', '', 'hello', ...parts.flatMap((p) => ['--b', p]), '--b--', ''].join('\n'),
    ),
  });
});
after(() => world.close());

async function download(index: number) {
  const response = await fetch(`${world.server.baseUrl}/api/v2/attachments/${emailId}/parts/${index}`, {
    headers: { authorization: `Bearer ${world.server.apiKey}` },
  });
  return { response, text: await response.text() };
}

test('GET /attachments/{emailId}/parts/{index}: CR and LF in a file name stay inside Content-Disposition', async () => {
  const { response, text } = await download(0);
  assert.equal(text, 'crlf');
  assert.equal(response.headers.get('x-injected'), null);
  assert.equal(
    response.headers.get('content-disposition'),
    `attachment; filename="evil__X-Injected: 1.txt"; filename*=UTF-8''evil%0D%0AX-Injected%3A%201.txt`,
  );
});

test('GET /attachments/{emailId}/parts/{index}: a 20,000-character file name is served cut to 255 characters with its extension, so clients can read the headers', async () => {
  const { response, text } = await download(1);
  assert.equal(response.status, 200);
  assert.equal(text, 'long');
  const served = `${'a'.repeat(251)}.pdf`;
  assert.equal(
    response.headers.get('content-disposition'),
    `attachment; filename="${served}"; filename*=UTF-8''${served}`,
  );
  const listed = await world.api.get(`/api/e2/attachments/${emailId}`);
  assert.equal(listed.body.data[1].filename, `${LONG_STEM}.pdf`, 'the listing keeps the name as sent');
});

test('GET /attachments/{emailId}/parts/{index}: a media type past RFC 6838 lengths is served as application/octet-stream', async () => {
  const { response, text } = await download(2);
  assert.equal(response.status, 200);
  assert.equal(text, 'type');
  assert.equal(response.headers.get('content-type'), 'application/octet-stream');
});

test('GET /attachments/{emailId}/parts/{index}: HTML is served as a download the browser may not sniff', async () => {
  const { response, text } = await download(3);
  assert.equal(text, '<script>1</script>');
  assert.equal(response.headers.get('content-type'), 'text/html');
  assert.equal(response.headers.get('x-content-type-options'), 'nosniff');
  assert.equal(
    response.headers.get('content-disposition'),
    `attachment; filename="page.html"; filename*=UTF-8''page.html`,
  );
});

test('GET /api/v2/mail/{id}/raw: the raw message is served as message/rfc822 the browser may not sniff', async () => {
  const response = await fetch(`${world.server.baseUrl}/api/v2/mail/${emailId}/raw`, {
    headers: { authorization: `Bearer ${world.server.apiKey}` },
  });
  assert.match(await response.text(), /\r\nSubject: Hostile names\r\n/);
  assert.equal(response.headers.get('content-type'), 'message/rfc822');
  assert.equal(response.headers.get('x-content-type-options'), 'nosniff');
});
