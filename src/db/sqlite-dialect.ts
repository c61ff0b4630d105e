import type { DatabaseSync, SQLInputValue } from 'node:sqlite';
import { SqliteDialect } from 'kysely';

/**
 * Kysely ships no dialect for `node:sqlite`, but its better-sqlite3 dialect only needs a database object with
 * `prepare()` and `close()`. This adapter gives it that shape. node:sqlite rows have a null prototype, so they
 * are copied into plain objects; parameters arrive from Kysely as an array and node:sqlite wants them spread.
 */
export function createSqliteDialect(database: DatabaseSync): SqliteDialect {
  return new SqliteDialect({
    database: {
      close: () => database.close(),
      prepare(sql: string) {
        const statement = database.prepare(sql);
        const plain = (row: unknown) => ({ ...(row as object) });
        return {
          reader: statement.columns().length > 0,
          all: (parameters: ReadonlyArray<unknown>) => statement.all(...(parameters as SQLInputValue[])).map(plain),
          run: (parameters: ReadonlyArray<unknown>) => {
            const result = statement.run(...(parameters as SQLInputValue[]));
            return { changes: result.changes, lastInsertRowid: result.lastInsertRowid };
          },
          *iterate(parameters: ReadonlyArray<unknown>) {
            for (const row of statement.iterate(...(parameters as SQLInputValue[]))) yield plain(row);
          },
        };
      },
    },
  });
}
