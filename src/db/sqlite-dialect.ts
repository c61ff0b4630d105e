import type { DatabaseSync, SQLInputValue, StatementSync } from 'node:sqlite';
import { SqliteDialect } from 'kysely';

/** Distinct SQL texts kept prepared; Kysely builds the same few hundred texts over and over. */
const STATEMENT_CACHE_SIZE = 500;

/** The ROLLBACK of a transaction SQLite has already rolled back: it runs nothing. */
const NOTHING_TO_ROLL_BACK = {
  reader: false,
  all: () => [],
  run: () => ({ changes: 0, lastInsertRowid: 0 }),
  *iterate() {},
};

/**
 * Kysely ships no dialect for `node:sqlite`, but its better-sqlite3 dialect only needs a database object with
 * `prepare()` and `close()`. This adapter gives it that shape. node:sqlite rows have a null prototype, so they
 * are copied into plain objects; parameters arrive from Kysely as an array and node:sqlite wants them spread.
 * Prepared statements are cached by SQL text: preparing costs more than running most of our queries.
 */
export function createSqliteDialect(database: DatabaseSync): SqliteDialect {
  const cache = new Map<string, { statement: StatementSync; reader: boolean }>();
  const prepared = (sql: string) => {
    let entry = cache.get(sql);
    if (!entry) {
      const statement = database.prepare(sql);
      entry = { statement, reader: statement.columns().length > 0 };
      if (cache.size >= STATEMENT_CACHE_SIZE) cache.delete(cache.keys().next().value!);
      cache.set(sql, entry);
    }
    return entry;
  };
  const plain = (row: unknown) => ({ ...(row as object) });
  return new SqliteDialect({
    database: {
      close: () => {
        cache.clear();
        database.close();
      },
      prepare(sql: string) {
        // SQLite itself rolls a transaction back on some errors (a full disk, an I/O error): Kysely's ROLLBACK would
        // then fail, and its error would take the place of the one that says what went wrong.
        if (sql.length === 8 && /^rollback$/i.test(sql) && !database.isTransaction) return NOTHING_TO_ROLL_BACK;
        // Kysely opens transactions with a plain (deferred) BEGIN. With a second connection writing (ingest's writer
        // thread), a transaction that read first could not then write (SQLITE_BUSY, never retried); taking the write
        // lock at BEGIN makes it wait its turn instead.
        const { statement, reader } = prepared(sql === 'begin' ? 'begin immediate' : sql);
        return {
          reader,
          all: (parameters: ReadonlyArray<unknown>) => statement.all(...(parameters as SQLInputValue[])).map(plain),
          run: (parameters: ReadonlyArray<unknown>) => {
            // The connection's last rowid can pass 2^53 (FTS5's shadow tables number their blocks so), and node:sqlite
            // refuses to read it as a number: Kysely takes bigints here anyway.
            statement.setReadBigInts(true);
            try {
              const result = statement.run(...(parameters as SQLInputValue[]));
              return { changes: result.changes, lastInsertRowid: result.lastInsertRowid };
            } finally {
              statement.setReadBigInts(false);
            }
          },
          // A stream may be interleaved with other queries, so it gets a statement of its own.
          *iterate(parameters: ReadonlyArray<unknown>) {
            const own = database.prepare(sql);
            for (const row of own.iterate(...(parameters as SQLInputValue[]))) yield plain(row);
          },
        };
      },
    },
  });
}
