import assert from 'node:assert/strict';
import { generateKeyPairSync } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { dkimSign } from 'mailauth';
import { startTestApp, type TestApp } from '../helpers/app.ts';
import { type DnsServer, startDnsServer } from '../helpers/dns-server.ts';
import { createVerifiedDomain } from '../helpers/domains.ts';
import { apiClient } from '../helpers/http.ts';
import { sendMail } from '../helpers/smtp.ts';
import { createAddress } from '../smtp/mail-setup.ts';

let dns: DnsServer;
let server: TestApp;

function newRsaKey() {
  const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const publicDer = publicKey.export({ type: 'spki', format: 'der' }).toString('base64');
  return { privateKey: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(), publicDer };
}

/** A DKIM key record split into 255-byte strings, as a real zone publishes a 2048-bit key. */
function dkimRecord(publicDer: string): string[] {
  const text = `v=DKIM1; k=rsa; p=${publicDer}`;
  const parts: string[] = [];
  for (let i = 0; i < text.length; i += 255) parts.push(text.slice(i, i + 255));
  return parts;
}

async function signed(raw: string, domain: string, privateKey: string): Promise<Buffer> {
  // The typings want the top-level fields; mailauth signs from `signatureData`.
  const options = { signatureData: [{ signingDomain: domain, selector: 'mail', privateKey }] };
  const result = await dkimSign(Buffer.from(raw), options as never);
  return Buffer.from(result.signatures + raw);
}

const senderKey = newRsaKey();
const attackerKey = newRsaKey();

before(async () => {
  dns = await startDnsServer();
  server = await startTestApp({ DNS_SERVERS: dns.address });
  const api = apiClient(server.baseUrl, server.apiKey);
  const domain = await createVerifiedDomain(api, dns, 'verdicts.test');
  await createAddress(api, 'inbox@verdicts.test', domain.id);

  // A legitimate sender: SPF allows loopback, its DKIM key is published, and DMARC asks for rejection.
  dns.set('signer.test', [{ type: 'TXT', data: 'v=spf1 ip4:127.0.0.1 -all' }]);
  dns.set('mail._domainkey.signer.test', [{ type: 'TXT', data: dkimRecord(senderKey.publicDer) }]);
  dns.set('_dmarc.signer.test', [{ type: 'TXT', data: 'v=DMARC1; p=reject' }]);
  // A forged domain: mail from loopback is not allowed, and the published key is not the one the forger has.
  dns.set('victim.test', [{ type: 'TXT', data: 'v=spf1 ip4:192.0.2.1 -all' }]);
  dns.set('mail._domainkey.victim.test', [{ type: 'TXT', data: dkimRecord(senderKey.publicDer) }]);
  dns.set('_dmarc.victim.test', [{ type: 'TXT', data: 'v=DMARC1; p=reject' }]);
});
after(async () => {
  await server.close();
  await dns.close();
});

async function storedVerdicts(queuedId: string) {
  const row = await server.app.database.db
    .selectFrom('emails')
    .select(['spf', 'dkim', 'dmarc', 'arc', 'spam', 'virus', 'auth_results'])
    .where('id', '=', queuedId)
    .executeTakeFirstOrThrow();
  return row;
}

describe('SPF, DKIM and DMARC verdicts through the loopback DNS server', () => {
  test('a message signed by its domain, from an IP its SPF allows, passes SPF, DKIM and DMARC', async () => {
    const raw = await signed(
      'From: Alice <alice@signer.test>\r\nTo: inbox@verdicts.test\r\nSubject: Genuine\r\nMessage-ID: <genuine@signer.test>\r\n\r\nHello from the real Alice.\r\n',
      'signer.test',
      senderKey.privateKey,
    );
    const sent = await sendMail({ port: server.smtpPort, from: 'alice@signer.test', to: 'inbox@verdicts.test', raw });
    assert.equal(sent.ok, true, sent.response);
    const row = await storedVerdicts(sent.queuedIds[0]!);
    assert.deepEqual(
      [row.spf, row.dkim, row.dmarc, row.arc, row.spam, row.virus],
      ['PASS', 'PASS', 'PASS', 'NONE', 'DISABLED', 'DISABLED'],
    );
    assert.match(row.auth_results!, /^Authentication-Results: mx\.mailroom\.test;/);
    assert.match(row.auth_results!, /spf=pass/);
    assert.match(row.auth_results!, /dkim=pass header\.i=@signer\.test/);
    assert.match(row.auth_results!, /dmarc=pass \(p=REJECT/);
  });

  test('a forged message (wrong key, disallowed IP) fails SPF, DKIM and DMARC and is still stored', async () => {
    const raw = await signed(
      'From: CEO <ceo@victim.test>\r\nTo: inbox@verdicts.test\r\nSubject: Wire the money\r\nMessage-ID: <forged@victim.test>\r\n\r\nUrgent.\r\n',
      'victim.test',
      attackerKey.privateKey,
    );
    const sent = await sendMail({ port: server.smtpPort, from: 'ceo@victim.test', to: 'inbox@verdicts.test', raw });
    assert.equal(sent.ok, true, sent.response);
    const row = await storedVerdicts(sent.queuedIds[0]!);
    assert.deepEqual([row.spf, row.dkim, row.dmarc, row.arc], ['FAIL', 'FAIL', 'FAIL', 'NONE']);
    assert.match(row.auth_results!, /spf=fail/);
    assert.match(row.auth_results!, /dkim=fail/);
    assert.match(row.auth_results!, /dmarc=fail/);
  });

  test('a signed message whose body was changed after signing fails DKIM: the body hash is checked', async () => {
    const raw = await signed(
      'From: Alice <alice@signer.test>\r\nTo: inbox@verdicts.test\r\nSubject: Invoice\r\nMessage-ID: <tampered@signer.test>\r\n\r\nPay 100 EUR.\r\n',
      'signer.test',
      senderKey.privateKey,
    );
    const tampered = Buffer.from(raw.toString().replace('Pay 100 EUR.', 'Pay 900 EUR.'));
    const sent = await sendMail({
      port: server.smtpPort,
      from: 'alice@signer.test',
      to: 'inbox@verdicts.test',
      raw: tampered,
    });
    assert.equal(sent.ok, true, sent.response);
    const row = await storedVerdicts(sent.queuedIds[0]!);
    // RFC 6376 section 6.1.3: a PERMFAIL, which Authentication-Results reports as fail (RFC 8601 section 2.7.1).
    assert.deepEqual([row.spf, row.dkim, row.dmarc], ['PASS', 'FAIL', 'PASS']);
    assert.match(row.auth_results!, /^ dkim=fail \(body hash did not verify\) header\.i=@signer\.test /m);
  });

  test('of many DKIM signatures only the first 10 are verified, so a message cannot hold analysis for minutes', async () => {
    // 30 made-up signatures, each over its own body length (a hash of the body each) and with a key to look up; the
    // header is longer than the first block SMTP stores a message in.
    const bogus = Array.from(
      { length: 30 },
      (_, i) =>
        `DKIM-Signature: v=1; a=rsa-sha256; c=relaxed/relaxed; d=b${i}.bogus.test; s=s; l=${40 - i}; h=from; bh=AAAA; b=${'A'.repeat(600)}\r\n`,
    ).join('');
    const raw = await signed(
      `${bogus}From: Alice <alice@signer.test>\r\nTo: inbox@verdicts.test\r\nSubject: Many signatures\r\nMessage-ID: <many-signatures@signer.test>\r\n\r\nHello from the real Alice, with plenty of signatures.\r\n`,
      'signer.test',
      senderKey.privateKey,
    );
    const sent = await sendMail({ port: server.smtpPort, from: 'alice@signer.test', to: 'inbox@verdicts.test', raw });
    assert.equal(sent.ok, true, sent.response);
    const row = await storedVerdicts(sent.queuedIds[0]!);
    assert.deepEqual([row.spf, row.dkim, row.dmarc], ['PASS', 'PASS', 'PASS']);
    // Each dkim= result of Authentication-Results as its word and signer: none for the signatures past the 10th.
    const dkimResults = [...row.auth_results!.matchAll(/^ dkim=(\S+) .*header\.i=(\S+)/gm)].map(
      (m) => `${m[1]} ${m[2]}`,
    );
    assert.deepEqual(dkimResults, [
      'pass @signer.test',
      ...Array.from({ length: 9 }, (_, i) => `fail @b${i}.bogus.test`),
    ]);
  });

  test('an unsigned message is judged on its envelope and header: SPF and DMARC pass, DKIM is none', async () => {
    const raw =
      'From: Alice <alice@signer.test>\r\nTo: inbox@verdicts.test\r\nSubject: Unsigned\r\nMessage-ID: <unsigned@signer.test>\r\n\r\nDKIM-Signature: not a header, just body text\r\n';
    const sent = await sendMail({ port: server.smtpPort, from: 'alice@signer.test', to: 'inbox@verdicts.test', raw });
    assert.equal(sent.ok, true, sent.response);
    const row = await storedVerdicts(sent.queuedIds[0]!);
    assert.deepEqual([row.spf, row.dkim, row.dmarc, row.arc], ['PASS', 'NONE', 'PASS', 'NONE']);
    assert.match(row.auth_results!, /dkim=none/);
    assert.match(row.auth_results!, /dmarc=pass/);
  });
});

describe('unsigned mail from one sender shares its verdicts only while they depend on nothing else', () => {
  let copies = 0;
  // Each copy is a message of its own (another Message-ID), so that none is taken for a retried duplicate.
  const unsigned = (from: string, extraHeaders = '') =>
    `${extraHeaders}From: ${from}\r\nTo: inbox@verdicts.test\r\nSubject: Burst\r\nMessage-ID: <burst-${++copies}@verdicts.test>\r\n\r\nOne of many.\r\n`;
  /** SPF, DKIM, DMARC and ARC of the stored message, in that order. */
  async function verdictsOf(raw: string | Buffer, envelopeFrom: string): Promise<string> {
    const sent = await sendMail({ port: server.smtpPort, from: envelopeFrom, to: 'inbox@verdicts.test', raw });
    assert.equal(sent.ok, true, sent.response);
    const row = await storedVerdicts(sent.queuedIds[0]!);
    return [row.spf, row.dkim, row.dmarc, row.arc].join(' ');
  }

  test('the same envelope with another From domain gets its own DMARC verdict', async () => {
    assert.equal(await verdictsOf(unsigned('bob@signer.test'), 'bob@signer.test'), 'PASS NONE PASS NONE');
    assert.equal(await verdictsOf(unsigned('ceo@victim.test'), 'bob@signer.test'), 'PASS NONE FAIL NONE');
  });

  test('a message with an ARC header, or signed, after unsigned ones from the same sender is judged on its own', async () => {
    assert.equal(await verdictsOf(unsigned('carol@signer.test'), 'carol@signer.test'), 'PASS NONE PASS NONE');
    const withArcResults = unsigned('carol@signer.test', 'ARC-Authentication-Results: i=1; mx.example; spf=pass\r\n');
    assert.equal(await verdictsOf(withArcResults, 'carol@signer.test'), 'PASS NONE PASS FAIL');
    const signedCopy = await signed(unsigned('carol@signer.test'), 'signer.test', senderKey.privateKey);
    assert.equal(await verdictsOf(signedCopy, 'carol@signer.test'), 'PASS PASS PASS NONE');
  });

  test('a From field folded before its colon is an author too: the DMARC pass of the sender is not reused', async () => {
    assert.equal(await verdictsOf(unsigned('gus@signer.test'), 'gus@signer.test'), 'PASS NONE PASS NONE');
    // The same sender, envelope and From field, and a second From that the checks read (and the message shows).
    const spoof = unsigned('gus@signer.test\r\nFrom\r\n : CEO <ceo@victim.test>');
    const sent = await sendMail({
      port: server.smtpPort,
      from: 'gus@signer.test',
      to: 'inbox@verdicts.test',
      raw: spoof,
    });
    assert.equal(sent.ok, true, sent.response);
    const row = await server.app.database.db
      .selectFrom('emails')
      .select(['spf', 'dkim', 'dmarc', 'arc', 'from_json'])
      .where('id', '=', sent.queuedIds[0]!)
      .executeTakeFirstOrThrow();
    assert.match(row.from_json!, /ceo@victim\.test/);
    // Two author domains: DMARC cannot be evaluated (RFC 9989 section 5.3.1), so it is none, not signer.test's pass.
    assert.deepEqual([row.spf, row.dkim, row.dmarc, row.arc], ['PASS', 'NONE', 'NONE', 'NONE']);
  });

  test('a header of more than 5,000 lines is not checked: PERMERROR, and the message is stored', async () => {
    const folded = (lines: number) => unsigned('erin@signer.test', `X-Folded: start\r\n${' more\r\n'.repeat(lines)}`);
    // With X-Folded's first line, From, To, Subject and Message-ID: 5,000 lines, then 5,001.
    assert.equal(await verdictsOf(folded(4_995), 'erin@signer.test'), 'PASS NONE PASS NONE');
    assert.equal(await verdictsOf(folded(4_996), 'erin@signer.test'), 'PERMERROR PERMERROR PERMERROR PERMERROR');
  });

  test('a DNS answer over 4,096 characters is asked again for the next message, a smaller one is cached', async () => {
    // An SPF record padded with mechanisms that match nothing, in 255-character strings as a zone publishes it.
    const spf = (allowed: string, mechanisms: number) => {
      const text = `v=spf1 ${allowed}${Array.from({ length: mechanisms }, (_, i) => ` ip4:192.0.2.${i % 250}`).join('')} -all`;
      return Array.from({ length: Math.ceil(text.length / 255) }, (_, i) => text.slice(i * 255, (i + 1) * 255));
    };
    dns.set('large.test', [{ type: 'TXT', data: spf('', 300) }]);
    dns.set('small.test', [{ type: 'TXT', data: spf('', 3) }]);
    assert.equal(await verdictsOf(unsigned('fay@large.test'), 'fay@large.test'), 'FAIL NONE NONE NONE');
    assert.equal(await verdictsOf(unsigned('fay@small.test'), 'fay@small.test'), 'FAIL NONE NONE NONE');
    // Now both allow loopback; another From field, so that the first verdicts are not reused as they are.
    dns.set('large.test', [{ type: 'TXT', data: spf('ip4:127.0.0.1', 300) }]);
    dns.set('small.test', [{ type: 'TXT', data: spf('ip4:127.0.0.1', 3) }]);
    assert.equal(await verdictsOf(unsigned('Fay <fay@large.test>'), 'fay@large.test'), 'PASS NONE NONE NONE');
    assert.equal(await verdictsOf(unsigned('Fay <fay@small.test>'), 'fay@small.test'), 'FAIL NONE NONE NONE');
  });

  test('a temporary DNS failure is not reused: the next message from the sender is judged again', async () => {
    dns.fail('flaky.test');
    assert.equal(await verdictsOf(unsigned('dan@flaky.test'), 'dan@flaky.test'), 'TEMPERROR NONE NONE NONE');
    dns.set('flaky.test', [{ type: 'TXT', data: 'v=spf1 ip4:127.0.0.1 -all' }]);
    assert.equal(await verdictsOf(unsigned('dan@flaky.test'), 'dan@flaky.test'), 'PASS NONE NONE NONE');
  });
});
