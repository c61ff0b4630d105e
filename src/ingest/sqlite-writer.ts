import { workerData } from 'node:worker_threads';
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

export interface SqliteWriterData {
  database: Extract<DatabaseConfig, { kind: 'sqlite' }>;
}

/**
 * Ingest's SQLite writes, on a thread with its own connection. node:sqlite is synchronous: inserting a message
 * (its row, indexes and search terms) and the commit's fsync would otherwise stop the event loop that serves SMTP
 * and HTTP. Messages are still committed in groups (one WAL fsync for many), by this thread alone.
 */
const { database } = workerData as SqliteWriterData;
const handle = await openDatabase(database);
const committer = new GroupCommitter(handle.db, { concurrency: 1 });

serveRequests<WriteRequest, WrittenEmail[]>(
  ({ message, othersComing }) => committer.run((trx) => writeMessage(trx, message), { othersComing }),
  async () => {
    await committer.idle();
    await handle.close();
  },
);
