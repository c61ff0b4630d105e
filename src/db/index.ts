export { startBackgroundThread } from './background-thread.ts';
export { type DatabaseHandle, type Db, openDatabase, type SqliteConfig } from './database.ts';
export { fromFlag, toFlag } from './flags.ts';
export { insertRow } from './insert-row.ts';
export { fromJson } from './json.ts';
export { migrateToLatest } from './migrate.ts';
export { preparedQuery } from './prepared-query.ts';
export type * from './schema.ts';
export { startWalCheckpointer, WAL_CHECKPOINT_THREAD_NAME } from './wal-checkpointer.ts';
