export { type DatabaseHandle, type Db, migrateToLatest, openDatabase } from './database.ts';
export { fromFlag, toFlag } from './flags.ts';
export type * from './schema.ts';
