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
  /** Each column's values, in the columns' order, as binary arrays of text (see textArray). */
  values: Buffer[];
}

/** PostgreSQL's type OID of `text`, the arrays' element type. */
const TEXT_OID = 25;

/**
 * `values` in PostgreSQL's binary array format, one dimension of text elements, as a parameter of type `text[]`:
 * PostgreSQL copies each element as it stands, where a JSON or array literal is unescaped a character at a time,
 * which cost more of its CPU than the insert itself on 10 KB bodies.
 */
export function textArray(values: readonly PreparedValue[]): Buffer {
  const texts = values.map((value) => (value === null ? null : String(value)));
  let size = 20;
  for (const text of texts) size += 4 + (text === null ? 0 : Buffer.byteLength(text));
  const array = Buffer.allocUnsafe(size);
  array.writeInt32BE(1, 0); // dimensions
  array.writeInt32BE(texts.includes(null) ? 1 : 0, 4);
  array.writeInt32BE(TEXT_OID, 8);
  array.writeInt32BE(texts.length, 12);
  array.writeInt32BE(1, 16); // lower bound
  let offset = 20;
  for (const text of texts) {
    const length = text === null ? -1 : array.write(text, offset + 4);
    offset = array.writeInt32BE(length, offset) + Math.max(length, 0);
  }
  return array;
}

/**
 * Each column's type on PostgreSQL, from the catalog, once per table and process: every schema has the same
 * migrations. The inserts take text and cast it to any other type.
 */
const columnTypes = new Map<string, Promise<Map<string, string>>>();

function typesOf(db: Kysely<Database>, table: keyof Database & string): Promise<Map<string, string>> {
  let types = columnTypes.get(table);
  if (!types) {
    types = sql<{ name: string; type: string }>`select attname as name, format_type(atttypid, atttypmod) as type
      from pg_attribute where attrelid = ${table}::regclass and attnum > 0 and not attisdropped`
      .execute(db)
      .then(({ rows }) => new Map(rows.map(({ name, type }) => [name, type])));
    types.catch(() => columnTypes.delete(table));
    columnTypes.set(table, types);
  }
  return types;
}

/**
 * PostgreSQL: one statement inserting every part's rows, its text the same for any number of rows, so that it is
 * prepared once (see preparedStatementName). Each part but the last is a data-modifying WITH; all run to completion,
 * and foreign keys are checked at the statement's end, when every part's rows exist. Sent ahead: ingest's writer
 * sends COMMIT right behind it.
 */
const insertArrayParts = (parts: readonly (Omit<InsertPart, 'values'> & { types: Map<string, string> })[]) =>
  preparedQuery(
    (db, values: Record<string, Buffer>) => {
      const statements = parts.map(({ table, columns, types }, index) => {
        const names = sql.join(columns.map((column) => sql.ref(column)));
        const arrays = sql.join(columns.map((_, column) => sql`${values[`part${index}:${column}`]}::text[]`));
        const selected = sql.join(
          columns.map((column) => {
            const type = types.get(column);
            if (!type) throw new Error(`${table} has no column ${column}`);
            return type === 'text' ? sql.ref(column) : sql`${sql.ref(column)}::${sql.raw(type)}`;
          }),
        );
        return sql`insert into ${sql.table(table)} (${names}) select ${selected} from unnest(${arrays}) as new_rows (${names})`;
      });
      const last = statements.pop()!;
      const ctes = statements.map((statement, index) => sql`${sql.raw(`part${index}`)} as (${statement})`);
      return { compile: () => (ctes.length > 0 ? sql`with ${sql.join(ctes)} ${last}` : last).compile(db) };
    },
    { named: true, sentAhead: true },
  );
const arrayInserts = new Map<string, ReturnType<typeof insertArrayParts>>();

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
    for (const [key, group] of byColumns) {
      const columns = key.split(',');
      parts.push({ table, columns, values: columns.map((column) => textArray(group.map((row) => row[column]!))) });
    }
  }
  if (parts.length === 0) return;
  const statement = parts.map(({ table, columns }) => `${table}(${columns})`).join(';');
  let insert = arrayInserts.get(statement);
  if (!insert) {
    // The statement keeps its parts for as long as the process runs: their names and types, not this batch's values.
    const typed = await Promise.all(
      parts.map(async ({ table, columns }) => ({ table, columns, types: await typesOf(db, table) })),
    );
    insert = insertArrayParts(typed);
    arrayInserts.set(statement, insert);
  }
  await insert(
    db,
    Object.fromEntries(
      parts.flatMap(({ values }, index) => values.map((array, column) => [`part${index}:${column}`, array])),
    ),
  );
}
