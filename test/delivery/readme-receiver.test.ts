import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { after, before, test } from 'node:test';
import { freePort } from '../helpers/ports.ts';
import { sendMail } from '../helpers/smtp.ts';
import { type DeliveryWorld, routeToWebhook, startDeliveryWorld } from './setup.ts';

const ROOT = new URL('../../', import.meta.url);
const WHSEC = `whsec_${Buffer.from('the README tour secret, 32 bytes').toString('base64')}`;

let world: DeliveryWorld;
before(async () => {
  world = await startDeliveryWorld('tour.test');
});
after(() => world.close());

test("the README tour's receiver verifies every webhook, multi-byte text split across body chunks too", async () => {
  const readme = readFileSync(new URL('README.md', ROOT), 'utf8');
  const code = /node -e "\n([\s\S]*?)" &/.exec(readme)?.[1] ?? '';
  assert.ok(code.includes('.listen(8080)'), 'the tour starts its receiver with node -e on port 8080');
  const port = await freePort();
  const receiver = spawn(process.execPath, ['-e', code.replace('.listen(8080)', `.listen(${port})`)], {
    cwd: ROOT,
    env: { ...process.env, WHSEC },
  });
  const lines: string[] = [];
  let output = '';
  receiver.stdout.setEncoding('utf8').on('data', (chunk: string) => {
    output += chunk;
    lines.push(...output.split('\n').slice(0, -1));
    output = output.slice(output.lastIndexOf('\n') + 1);
  });
  try {
    const { address } = await routeToWebhook(world, 'Tour', `http://127.0.0.1:${port}/hook`, { secret: WHSEC });
    // Three-byte characters over several of the body's chunks (64 KB each): some fall on a chunk's edge.
    for (const [subject, text] of [
      ['Hello', 'Hi there'],
      ['Grüße', '€'.repeat(120_000)],
    ]) {
      const sent = await sendMail({ port: world.server.smtpPort, to: address, subject, text });
      assert.equal(sent.code, 250, sent.response);
      const count = lines.length + 1;
      for (const deadline = Date.now() + 10_000; lines.length < count && Date.now() < deadline; ) {
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    }
    assert.deepEqual(lines, ['verified email.received Hello', 'verified email.received Grüße']);
  } finally {
    receiver.kill();
  }
});
