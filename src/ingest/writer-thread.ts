import { workerData } from 'node:worker_threads';
import { sql } from 'kysely';
import type { DatabaseConfig } from '../config/index.ts';
import { openDatabase } from '../db/index.ts';
import { type PreparedMessage, type WrittenEmail, writeMessage } from './email-writer.ts';
import { GroupCommitter } from './group-committer.ts';
import { serveRequests } from './worker-pool.ts';

export interface WriteRequest {
  message: PreparedMessage;
  /** Other messages are on their way, so holding the commit a moment lets them share it. */
  othersComing: boolean;
}

export interface WriterThreadData {
  /**
   * The installation's database. On PostgreSQL the thread opens a pool of its own, of the configured size, and as
   * many transactions commit at once.
   */
  database: DatabaseConfig;
}

/**
 * Ingest's writes, on a thread with its own database connection(s), in group commits (one WAL fsync for many
 * messages). Each statement costs the thread that runs it: node:sqlite runs the whole insert, its indexes, its
 * search terms and the commit's fsync synchronously, and pg spends a round trip's protocol work per statement.
 * On the event loop that serves SMTP and HTTP, either would hold up every connection.
 */
const { database } = workerData as WriterThreadData;
const handle = await openDatabase(database);
if (database.kind === 'sqlite') {
  // Each insert into emails runs inside the group's transaction and fires triggers, so SQLite keeps a statement
  // journal for it (the old image of each page it changes). Once one statement's journal passes 64 KiB, SQLite moves
  // it to a temporary file for the rest of the transaction: most commits created, wrote and deleted one in the temp
  // directory (44 files in 51 commits, seen with strace). In a 50-connection run that cost 42 write calls and 90 KB
  // written per message, against 17 and 35 KB (the WAL alone) with the journal in memory, where it is a few pages
  // held while one statement runs. Durability does not depend on it: a commit is durable through the WAL.
  await sql`PRAGMA temp_store = MEMORY`.execute(handle.db);
  // The pages the writer touches again (the tails of its indexes) fit in 8 MiB. Chosen when the writer still indexed
  // for search: a commit that touched FTS5 scanned the whole page cache's hash table, and with the 64 MiB cache of
  // other connections that was 5% of this thread's time (a writer micro-benchmark, 8 messages a commit: 0.41-0.43 ms
  // of CPU per message against 0.46-0.50). Since the index moved to a file of its own, 8 and 64 MiB cost the writer
  // the same (0.20-0.22 ms per message, 4 interleaved pairs at 50 connections).
  await sql`PRAGMA cache_size = -8192`.execute(handle.db);
}
const committer = new GroupCommitter(handle.db, {
  concurrency: database.kind === 'postgres' ? database.poolSize : 1,
});

serveRequests<WriteRequest, WrittenEmail[]>(
  ({ message, othersComing }) => committer.run((trx) => writeMessage(trx, message), { othersComing }),
  async () => {
    await committer.idle();
    await handle.close();
  },
);
