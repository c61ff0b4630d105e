import { type Insertable, type Kysely, PostgresAdapter, sql } from 'kysely';
import { type PreparedValue, preparedQuery } from './prepared-query.ts';
import type { Database } from './schema.ts';

const insertInto = (table: keyof Database & string) =>
  preparedQuery((db, row: Record<string, PreparedValue>) => db.insertInto(table).values(row as never));
const inserts = new Map<string, ReturnType<typeof insertInto>>();

/**
 * PostgreSQL: any number of rows with the same columns in one statement, its text the same for every count, so that
 * it is prepared once (see preparedStatementName). The rows travel as one JSON array, typed by the table's own row
 * type.
 */
const insertJsonRows = (table: keyof Database & string, columns: readonly string[]) =>
  preparedQuery((db, { rows }: { rows: string }) => {
    const names = sql.join(columns.map((column) => sql.ref(column)));
    return {
      compile: () =>
        sql`insert into ${sql.table(table)} (${names}) select ${names} from json_populate_recordset(null::${sql.table(table)}, ${rows}::json)`.compile(
          db,
        ),
    };
  });
const jsonInserts = new Map<string, ReturnType<typeof insertJsonRows>>();

/** The row without its undefined members: Kysely leaves such a column out, so the prepared insert does too. */
function definedValues(row: object): Record<string, PreparedValue> {
  const values: Record<string, PreparedValue> = {};
  for (const [column, value] of Object.entries(row)) if (value !== undefined) values[column] = value as PreparedValue;
  return values;
}

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
  await insert(db, definedValues(row));
}

/**
 * Inserts rows in order: on PostgreSQL one statement per set of columns, where a statement per row cost a round trip,
 * and the table's statement triggers ran once per row; on SQLite, where a statement costs no round trip, one per row.
 */
export async function insertRows<T extends keyof Database & string>(
  db: Kysely<Database>,
  table: T,
  rows: readonly Insertable<Database[T]>[],
): Promise<void> {
  if (!(db.getExecutor().adapter instanceof PostgresAdapter)) {
    for (const row of rows) await insertRow(db, table, row);
    return;
  }
  const byColumns = new Map<string, Record<string, PreparedValue>[]>();
  for (const row of rows) {
    const values = definedValues(row);
    const key = Object.keys(values).join(',');
    const group = byColumns.get(key);
    if (group) group.push(values);
    else byColumns.set(key, [values]);
  }
  for (const [key, group] of byColumns) {
    const statement = `${table}(${key})`;
    let insert = jsonInserts.get(statement);
    if (!insert) {
      insert = insertJsonRows(table, key.split(','));
      jsonInserts.set(statement, insert);
    }
    await insert(db, { rows: JSON.stringify(group) });
  }
}
