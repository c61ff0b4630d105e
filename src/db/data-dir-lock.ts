import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { ConfigError } from '../config/index.ts';

const SQLITE_BUSY = 5;

export interface DataDirLock {
  release(): void;
}

/**
 * Makes this process the only server on `dataDir`: a SQLite database and a filesystem blob store each take one
 * process (the blob store's start-up recovery removes records another process is still writing). The lock is SQLite's
 * own exclusive lock on an empty database file, so the operating system lets go of it when the process ends, even on
 * `kill -9`, and no stale lock outlives its holder.
 */
export function lockDataDir(dataDir: string): DataDirLock {
  mkdirSync(dataDir, { recursive: true });
  const lock = new DatabaseSync(join(dataDir, 'mailroom.lock'), { timeout: 0 });
  try {
    lock.exec('PRAGMA locking_mode = EXCLUSIVE; BEGIN EXCLUSIVE');
  } catch (error) {
    lock.close();
    if ((error as { errcode?: number }).errcode !== SQLITE_BUSY) throw error;
    throw new ConfigError(
      `DATA_DIR ${dataDir} is in use by another Mailroom process: one process per DATA_DIR on SQLite or with ` +
        'BLOB_STORE=fs; set DATA_DIR to another directory, or run several processes on PostgreSQL (DATABASE_URL) ' +
        'with an S3 BLOB_STORE',
    );
  }
  return { release: () => lock.close() };
}
