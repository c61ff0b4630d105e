import { CompiledQuery, type DialectAdapter, type Insertable, type Kysely } from 'kysely';
import type { Database } from './schema.ts';

const compiledInserts = new WeakMap<DialectAdapter, Map<string, string>>();

/**
 * Inserts one row with SQL that Kysely compiled once for this database, table and set of columns. For the hot paths
 * (ingest writes every email this way): building a 40-column insert anew costs more than SQLite takes to run it.
 */
export async function insertRow<T extends keyof Database & string>(
  db: Kysely<Database>,
  table: T,
  row: Insertable<Database[T]>,
): Promise<void> {
  const executor = db.getExecutor();
  let byShape = compiledInserts.get(executor.adapter);
  if (!byShape) {
    byShape = new Map();
    compiledInserts.set(executor.adapter, byShape);
  }
  // Kysely leaves out columns whose value is undefined; so does the shape, so that values and SQL agree.
  const columns: string[] = [];
  const values: unknown[] = [];
  for (const [column, value] of Object.entries(row)) {
    if (value === undefined) continue;
    columns.push(column);
    values.push(value);
  }
  const shape = `${table}(${columns.join(',')})`;
  let text = byShape.get(shape);
  if (text === undefined) {
    text = db
      .insertInto(table)
      .values(row as never)
      .compile().sql;
    byShape.set(shape, text);
  }
  await db.executeQuery(CompiledQuery.raw(text, values));
}
