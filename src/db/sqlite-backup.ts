import { closeSync, fsyncSync, openSync } from 'node:fs';
import { dirname } from 'node:path';
import { DatabaseSync } from 'node:sqlite';

/**
 * Writes a consistent copy of the SQLite database `file` to `target`, while servers may be writing it: VACUUM INTO
 * reads the database in one transaction, which WAL lets run beside their commits. The copy is compact and complete
 * in one file, without a WAL, and durable when this returns. The search index's file is not copied: it is built again
 * where the copy is started.
 */
export function backUpSqliteDatabase(file: string, target: string): void {
  // The writers' checkpoints may hold the WAL for a moment; a reader waits for them rather than failing.
  const database = new DatabaseSync(file, { timeout: 10_000 });
  try {
    database.prepare('VACUUM INTO ?').run(target);
  } finally {
    database.close();
  }
  for (const path of [target, dirname(target)]) {
    const descriptor = openSync(path, 'r');
    try {
      fsyncSync(descriptor);
    } finally {
      closeSync(descriptor);
    }
  }
}
