import { workerData } from 'node:worker_threads';
import { sql } from 'kysely';
import type { DatabaseConfig } from '../config/index.ts';
import { GroupCommitter, openDatabase } from '../db/index.ts';
import { serveRequests } from '../workers/index.ts';
import { type PreparedMessage, type WrittenEmail, writeMessages } from './email-writer.ts';

export interface WriteRequest {
  message: PreparedMessage;
  /** Other messages are on their way, so holding the commit a moment lets them share it. */
  othersComing: boolean;
}

export interface WriterThreadData {
  /**
   * The installation's database. On PostgreSQL the thread opens a pool of its own, of the configured size, and up
   * to POSTGRES_TRANSACTIONS of them commit at once.
   */
  database: DatabaseConfig;
}

/**
 * Ingest's writes, on a thread with its own database connection(s), in group commits (one WAL fsync for many
 * messages). Each statement costs the thread that runs it: node:sqlite runs the whole insert, its indexes, its
 * triggers and the commit's fsync synchronously, and pg spends a round trip's protocol work per statement.
 * On the event loop that serves SMTP and HTTP, either would hold up every connection.
 */
const { database } = workerData as WriterThreadData;
/**
 * Each transaction costs PostgreSQL and this thread about as much as several messages' rows (BEGIN, the Message-ID
 * lookup, the inserts' statement, COMMIT): with one per free connection, most held one or two messages. With two,
 * one gathers while the other commits (see docs/performance.md).
 */
const POSTGRES_TRANSACTIONS = 2;
const handle = await openDatabase(database, { keepConnections: POSTGRES_TRANSACTIONS, pipeline: true });
if (database.kind === 'sqlite') {
  // An insert's statement journal past 64 KiB would otherwise spill to a temporary file, created and deleted in most
  // commits; in memory it is a few pages held while one statement runs. A commit is durable through the WAL alone.
  await sql`PRAGMA temp_store = MEMORY`.execute(handle.db);
  // The pages the writer touches again (the tails of its indexes) fit in 8 MiB; see docs/performance.md.
  await sql`PRAGMA cache_size = -8192`.execute(handle.db);
}
const committer = new GroupCommitter(handle.db, {
  concurrency: database.kind === 'postgres' ? Math.min(database.poolSize, POSTGRES_TRANSACTIONS) : 1,
});

serveRequests<WriteRequest, WrittenEmail[]>(
  ({ message, othersComing }) => committer.runBatched(message, writeMessages, { othersComing }),
  async () => {
    await committer.idle();
    await handle.close();
  },
);
