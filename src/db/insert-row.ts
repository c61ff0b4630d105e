import { type Insertable, type Kysely, sql } from 'kysely';
import { onPostgres } from './dialect.ts';
import { type PreparedValue, preparedQuery } from './prepared-query.ts';
import type { Database } from './schema.ts';

const insertInto = (table: keyof Database & string) =>
  preparedQuery((db, row: Record<string, PreparedValue>) => db.insertInto(table).values(row as never));
const inserts = new Map<string, ReturnType<typeof insertInto>>();

/** One table's rows with the same set of columns, on PostgreSQL: a part of an insert statement. */
interface InsertPart {
  table: keyof Database & string;
  columns: string[];
  /** The rows as one JSON array, typed by the table's own row type. */
  rows: string;
}

/**
 * PostgreSQL: one statement inserting every part's rows, its text the same for any number of rows, so that it is
 * prepared once (see preparedStatementName). Each part but the last is a data-modifying WITH; all run to completion,
 * and foreign keys are checked at the statement's end, when every part's rows exist.
 */
const insertJsonParts = (parts: readonly Omit<InsertPart, 'rows'>[]) =>
  preparedQuery(
    (db, values: Record<string, string>) => {
      const statements = parts.map(({ table, columns }, index) => {
        const names = sql.join(columns.map((column) => sql.ref(column)));
        return sql`insert into ${sql.table(table)} (${names}) select ${names} from json_populate_recordset(null::${sql.table(table)}, ${values[`rows${index}`]}::json)`;
      });
      const last = statements.pop()!;
      const ctes = statements.map((statement, index) => sql`${sql.raw(`part${index}`)} as (${statement})`);
      return { compile: () => (ctes.length > 0 ? sql`with ${sql.join(ctes)} ${last}` : last).compile(db) };
    },
    { named: true },
  );
const jsonInserts = new Map<string, ReturnType<typeof insertJsonParts>>();

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

/** Rows for one table, as insertRows takes them. */
export interface TableRows<T extends keyof Database & string = keyof Database & string> {
  table: T;
  rows: readonly Insertable<Database[T]>[];
}

/** Inserts one table's rows in order, as insertTables does. */
export async function insertRows<T extends keyof Database & string>(
  db: Kysely<Database>,
  table: T,
  rows: readonly Insertable<Database[T]>[],
): Promise<void> {
  await insertTables(db, [{ table, rows } as TableRows]);
}

/**
 * Inserts every table's rows, each table's in the order given: on PostgreSQL in one statement (one round trip, and
 * each table's statement triggers run once), where a statement per table or per row cost a round trip each; on
 * SQLite, where a statement costs no round trip, one per row.
 */
export async function insertTables(db: Kysely<Database>, writes: readonly TableRows[]): Promise<void> {
  if (!onPostgres(db)) {
    for (const { table, rows } of writes) for (const row of rows) await insertRow(db, table, row);
    return;
  }
  const parts: InsertPart[] = [];
  for (const { table, rows } of writes) {
    const byColumns = new Map<string, Record<string, PreparedValue>[]>();
    for (const row of rows) {
      const values = definedValues(row);
      const key = Object.keys(values).join(',');
      const group = byColumns.get(key);
      if (group) group.push(values);
      else byColumns.set(key, [values]);
    }
    for (const [key, group] of byColumns) parts.push({ table, columns: key.split(','), rows: JSON.stringify(group) });
  }
  if (parts.length === 0) return;
  const statement = parts.map(({ table, columns }) => `${table}(${columns})`).join(';');
  let insert = jsonInserts.get(statement);
  if (!insert) {
    insert = insertJsonParts(parts.map(({ table, columns }) => ({ table, columns })));
    jsonInserts.set(statement, insert);
  }
  await insert(db, Object.fromEntries(parts.map(({ rows }, index) => [`rows${index}`, rows])));
}
