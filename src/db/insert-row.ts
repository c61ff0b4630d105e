import type { Insertable, Kysely } from 'kysely';
import { type PreparedValue, preparedQuery } from './prepared-query.ts';
import type { Database } from './schema.ts';

const insertInto = (table: keyof Database & string) =>
  preparedQuery((db, row: Record<string, PreparedValue>) => db.insertInto(table).values(row as never));
const inserts = new Map<string, ReturnType<typeof insertInto>>();

/**
 * Inserts one row, prepared once per table and set of columns (see preparedQuery). For the hot paths (ingest writes
 * every email this way): building a 40-column insert anew costs more than SQLite takes to run it.
 */
export async function insertRow<T extends keyof Database & string>(
  db: Kysely<Database>,
  table: T,
  row: Insertable<Database[T]>,
): Promise<void> {
  let insert = inserts.get(table);
  if (!insert) {
    insert = insertInto(table);
    inserts.set(table, insert);
  }
  // Kysely leaves out a column whose value is undefined, so the prepared insert does too.
  const values: Record<string, PreparedValue> = {};
  for (const [column, value] of Object.entries(row)) if (value !== undefined) values[column] = value as PreparedValue;
  await insert(db, values);
}
