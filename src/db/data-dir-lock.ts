import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { ConfigError } from '../core/index.ts';

const SQLITE_BUSY = 5;

export interface DataDirLock {
  release(): void;
}

/**
 * Makes this process the only server on `dataDir`: a SQLite database and a filesystem blob store each take one
 * process (the blob store's start-up recovery removes records another process is still writing). The lock is SQLite's
 * own exclusive lock on an empty database file, so the operating system lets go of it when the process ends, even on
 * `kill -9`, and no stale lock outlives its holder. PostgreSQL with an S3 blob store keeps nothing there that one
 * process must own, and takes no lock (undefined).
 */
export function lockDataDir(
  dataDir: string,
  database: 'sqlite' | 'postgres',
  blobs: 'fs' | 's3',
): DataDirLock | undefined {
  if (database === 'postgres' && blobs === 's3') return undefined;
  mkdirSync(dataDir, { recursive: true });
  const lock = new DatabaseSync(join(dataDir, 'mailroom.lock'), { timeout: 0 });
  try {
    lock.exec('PRAGMA locking_mode = EXCLUSIVE; BEGIN EXCLUSIVE');
  } catch (error) {
    lock.close();
    if ((error as { errcode?: number }).errcode !== SQLITE_BUSY) throw error;
    const busy = `DATA_DIR ${dataDir} is in use by another Mailroom process: `;
    throw new ConfigError(
      database === 'sqlite'
        ? `${busy}one process per DATA_DIR on SQLite or with BLOB_STORE=fs; set DATA_DIR to another directory, or ` +
            'run several processes on PostgreSQL (DATABASE_URL) with an S3 BLOB_STORE'
        : // Another DATA_DIR on the same database would start, and find none of the messages stored in this one.
          `${busy}with BLOB_STORE=fs the installation's messages are stored in it, where no process on another ` +
            'DATA_DIR finds them; to run several processes on PostgreSQL, use an S3 BLOB_STORE',
    );
  }
  return { release: () => lock.close() };
}
