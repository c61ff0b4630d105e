import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { sql } from 'kysely';
import { startTestApp, TEST_DATABASE_URL, type TestApp } from '../helpers/app.ts';
import { type DnsServer, startDnsServer } from '../helpers/dns-server.ts';
import { createVerifiedDomain } from '../helpers/domains.ts';
import { apiClient } from '../helpers/http.ts';
import { sendMail } from '../helpers/smtp.ts';
import { createAddress } from '../smtp/mail-setup.ts';

let dns: DnsServer;
let server: TestApp;
before(async () => {
  if (!TEST_DATABASE_URL) return;
  dns = await startDnsServer();
  server = await startTestApp({ DNS_SERVERS: dns.address });
  const api = apiClient(server.baseUrl, server.apiKey);
  const domain = await createVerifiedDomain(api, dns, 'compressed.test');
  await createAddress(api, 'inbox@compressed.test', domain.id);
});
after(async () => {
  await server?.close();
  await dns?.close();
});

test("an email's bodies are compressed with lz4 where PostgreSQL has it, and read back whole", {
  skip: !TEST_DATABASE_URL && 'needs TEST_DATABASE_URL (PostgreSQL)',
}, async () => {
  const db = server.app.database.db;
  const { rows } = await sql<{ lz4: boolean }>`
    SELECT 'lz4' = ANY (enumvals) AS lz4 FROM pg_settings WHERE name = 'default_toast_compression'`.execute(db);
  const method = rows[0]?.lz4 ? 'lz4' : 'pglz';
  // Each body alone is over the row's 8 kB TOAST target, so both are compressed.
  const text = 'Every line of this body says the same thing, so it compresses well.\n'.repeat(300);
  const html = `<div>${'<p>Every paragraph of this body says the <b>same</b> thing.</p>\n'.repeat(300)}</div>`;
  const sent = await sendMail({ port: server.smtpPort, to: 'inbox@compressed.test', subject: 'Long', text, html });
  assert.equal(sent.ok, true, sent.response);
  const id = sent.queuedIds[0]!;

  const stored = await sql<{ html: string | null; text: string | null }>`
    SELECT pg_column_compression(html_body) AS html, pg_column_compression(text_body) AS text
    FROM emails WHERE id = ${id}`.execute(db);
  assert.deepEqual(stored.rows, [{ html: method, text: method }]);
  const read = await apiClient(server.baseUrl, server.apiKey).get(`/api/v2/mail/${id}/html`);
  assert.equal(read.status, 200);
  assert.equal(read.body.html, html);
});
