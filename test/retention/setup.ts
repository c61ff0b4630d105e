import assert from 'node:assert/strict';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { sql } from 'kysely';
import { rawBlobKeys } from '../helpers/blobs.ts';
import type { MailWorld } from '../mail/setup.ts';

/** One stored email, with what a test checks of it once it is erased. */
export interface Sent {
  id: string;
  /** A word only this email's body holds. */
  word: string;
  blobKey: string;
}

/** Sends one message to `to` with a word of its own, and notes its id and raw blob key. */
export async function sendTracked(world: MailWorld, to: string, word: string, from = 'sender@elsewhere.test') {
  const [id] = await world.deliver({ from, to, subject: `About ${word}`, text: `The word is ${word}.` });
  const read = await world.api.get(`/api/v2/mail/${id}`);
  assert.equal(read.status, 200, JSON.stringify(read.body));
  return { id: id!, word, blobKey: read.body.processing.s3Info.objectKey as string } satisfies Sent;
}

/** Whether the email is gone everywhere: its row, its search entries, its raw blob and the blob's bytes on disk. */
export async function isErased(world: MailWorld, sent: Sent): Promise<boolean> {
  const read = await world.api.get(`/api/v2/mail/${sent.id}`);
  if (read.status !== 404) return false;
  const found = await world.api.get(`/api/v2/mail?search=${sent.word}&includeArchived=true`);
  if (found.body.pagination.total !== 0) return false;
  if ((await indexedEntries(world, sent.word)) !== 0) return false;
  if ((await rawBlobKeys(world.server.app.blobs)).includes(sent.blobKey)) return false;
  return !(await blobFilesHold(world, sent.word));
}

/** Whether any file of the filesystem blob store still holds the word: a deleted record's bytes must not stay. */
async function blobFilesHold(world: MailWorld, word: string): Promise<boolean> {
  const root = join(world.server.dataDir, 'blobs');
  const entries = await readdir(root, { recursive: true, withFileTypes: true }).catch(() => []);
  for (const entry of entries) {
    if (!entry.isFile()) continue;
    const bytes = await readFile(join(entry.parentPath, entry.name)).catch(() => Buffer.alloc(0));
    if (bytes.includes(word)) return true;
  }
  return false;
}

/** Whether the email is all there: readable, found by its word, and its raw message served. */
export async function isKept(world: MailWorld, sent: Sent): Promise<boolean> {
  const found = await world.api.get(`/api/v2/mail?search=${sent.word}&includeArchived=true`);
  const raw = await world.api.get(`/api/v2/mail/${sent.id}/raw`);
  return found.body.pagination.total === 1 && found.body.emails[0].id === sent.id && raw.status === 200;
}

/**
 * SQLite's full-text entries for a word, read from the index itself (a search joins the rows, so it would miss an
 * entry left behind); on PostgreSQL the vector is in the row, so there are none apart from the rows.
 */
async function indexedEntries(world: MailWorld, word: string): Promise<number> {
  const { database } = world.server.app;
  if (database.kind !== 'sqlite') return 0;
  const { rows } = await sql<{ entries: number }>`
    SELECT count(*) AS entries FROM search.emails_fts WHERE emails_fts MATCH ${word}`.execute(database.db);
  return Number(rows[0]!.entries);
}

/** The segment files of the filesystem blob store. */
export async function segmentFiles(world: MailWorld): Promise<string[]> {
  const entries = await readdir(join(world.server.dataDir, 'blobs'), { recursive: true });
  return entries.filter((entry) => entry.endsWith('.seg'));
}
