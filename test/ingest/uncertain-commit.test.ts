import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { sql } from 'kysely';
import { TEST_DATABASE_URL, type TestApp } from '../helpers/app.ts';
import { rawBlobKeys } from '../helpers/blobs.ts';
import { type DnsServer, startDnsServer } from '../helpers/dns-server.ts';
import { sendMail } from '../helpers/smtp.ts';
import { startReceivingApp } from '../smtp/mail-setup.ts';

let dns: DnsServer;
let server: TestApp;

/**
 * Makes the COMMIT of an email fail unless its subject is in `commit_gate`: a deferred foreign key, checked only at
 * COMMIT, after every statement of the ingest transaction succeeded. That is the failure whose outcome ingest cannot
 * know in general (a connection that breaks mid-COMMIT looks the same).
 */
async function gateCommitsOnSubject(app: TestApp['app']) {
  const db = app.database.db;
  await sql`create table commit_gate (subject text primary key)`.execute(db);
  await sql`insert into commit_gate (subject) values ('Allowed')`.execute(db);
  if (TEST_DATABASE_URL) {
    await sql`alter table emails add constraint emails_commit_gate foreign key (subject) references commit_gate (subject)
      deferrable initially deferred not valid`.execute(db);
    return;
  }
  await sql`create table commit_gate_refs (subject text references commit_gate (subject) deferrable initially deferred)`.execute(
    db,
  );
  await sql`create trigger emails_commit_gate after insert on emails
    begin insert into commit_gate_refs (subject) values (new.subject); end`.execute(db);
}

before(async () => {
  dns = await startDnsServer();
  server = await startReceivingApp(dns, 'store@uncertain.test');
  await gateCommitsOnSubject(server.app);
});
after(async () => {
  const closed = await server.close().then(
    () => undefined,
    (error: Error) => error,
  );
  const logged = closed?.message.split('\n').slice(1).filter(Boolean) ?? [];
  assert.equal(logged.length, 1, 'the refused message was logged once');
  assert.equal(JSON.parse(logged[0]!).msg, 'ingest failed');
  await dns.close();
});

const message = (subject: string) =>
  `From: a@sender.test\r\nTo: store@uncertain.test\r\nSubject: ${subject}\r\nMessage-ID: <${subject}@sender.test>\r\n\r\nBody\r\n`;

test('a message whose COMMIT failed gets 451 and its blob is kept; the next clean stop does not vouch for the store', async () => {
  const refused = await sendMail({ port: server.smtpPort, to: 'store@uncertain.test', raw: message('Refused') });
  assert.equal(refused.code, 451);
  assert.match(refused.response, /^451 4\.3\.0 /);
  const db = server.app.database.db;
  assert.deepEqual(await db.selectFrom('emails').select('id').execute(), []);
  // Ingest cannot tell this COMMIT from one that broke after committing, whose rows would refer to the blob.
  const keptBlobs = await rawBlobKeys(server.app.blobs);
  assert.equal(keptBlobs.length, 1);

  const accepted = await sendMail({ port: server.smtpPort, to: 'store@uncertain.test', raw: message('Allowed') });
  assert.equal(accepted.code, 250);
  const stored = await db.selectFrom('emails').select(['subject', 'raw_blob_key']).execute();
  assert.equal(stored.length, 1);
  assert.equal(stored[0]!.subject, 'Allowed');
  assert.deepEqual(await rawBlobKeys(server.app.blobs), [...keptBlobs, stored[0]!.raw_blob_key].sort());

  // A blob was left for recovery, so a stop now is not clean: the next start looks for orphans.
  assert.equal(await server.app.ingest.drain(), false);
});
