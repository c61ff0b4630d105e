import { type Compilable, CompiledQuery, type DialectAdapter, type Kysely } from 'kysely';
import { sendAhead } from './pipelined-transactions.ts';
import type { Database } from './schema.ts';

/**
 * A value a prepared query is run with: a scalar, bytes (a binary parameter on PostgreSQL), or a list (e.g. for
 * `in`), whose length is part of its shape.
 */
export type PreparedValue = string | number | null | Buffer | ReadonlyArray<string | number | null>;

/** Where each of the compiled query's parameters comes from: a constant of the query, or one of the values. */
type ParameterSource = { constant: unknown } | { key: string; index?: number };

interface Template {
  sql: string;
  parameters: ParameterSource[];
}

/**
 * The names under which PostgreSQL connections keep prepared queries as statements of their own (see
 * preparedStatementName). Templates are few (one per query, shape and dialect) and live as long as the process, and
 * so do these names.
 */
const statementNames = new Map<string, string>();

/**
 * The name under which a PostgreSQL connection keeps `sql` prepared, when it is a prepared query's insert or one
 * marked `named`: it is then parsed once per connection, and after five runs PostgreSQL may keep one plan for every
 * value (a generic plan) instead of planning each run (see openPostgres). Other queries are parsed and planned at
 * every run: a generic plan made while a table was still nearly empty keeps an index that fits it then; the
 * Message-ID lookup kept walking a whole account's emails by the thread index, for each message.
 */
export function preparedStatementName(sql: string): string | undefined {
  return statementNames.get(sql);
}

/** Stands for a value while the query is compiled; no real value contains a NUL followed by this text. */
const placeholder = (key: string, index?: number) => `\u0000prepared:${key}${index === undefined ? '' : `:${index}`}`;

/**
 * A query that Kysely builds and compiles once per dialect and shape, then runs with new values: for the hot paths
 * (every RCPT is routed, every message is checked for a copy and threaded), building and compiling a query anew
 * costs more than SQLite takes to run it.
 *
 * `build` must use each value only as a query parameter and must not branch on it: it runs once, with placeholders
 * standing in for the values. A value missing from the compiled parameters is reported at once. A list value is
 * compiled once per length. `named`: PostgreSQL keeps it prepared on each connection (see preparedStatementName), for
 * a query whose tables are found by unique keys and stay small (configuration), so that any plan reads few rows.
 * `sentAhead`: a statement whose result nothing reads, which a pipelining PostgreSQL connection sends without waiting
 * for its answer; its error comes with the next statement's (see pipelineTransactions).
 */
export function preparedQuery<Values extends Record<string, PreparedValue>, Row>(
  build: (db: Kysely<Database>, values: Values) => Compilable<Row>,
  options: { named?: boolean; sentAhead?: boolean } = {},
) {
  const templates = new WeakMap<DialectAdapter, Map<string, Template>>();

  function compile(db: Kysely<Database>, values: Values): Template {
    const placeholders: Record<string, PreparedValue> = {};
    const sources = new Map<unknown, Extract<ParameterSource, { key: string }>>();
    for (const [key, value] of Object.entries(values)) {
      if (Array.isArray(value)) {
        const names = value.map((_, index) => placeholder(key, index));
        for (const [index, name] of names.entries()) sources.set(name, { key, index });
        placeholders[key] = names;
      } else {
        placeholders[key] = placeholder(key);
        sources.set(placeholder(key), { key });
      }
    }
    const compiled = build(db, placeholders as Values).compile();
    const unused = [...sources].filter(([name]) => !compiled.parameters.includes(name)).map(([, source]) => source.key);
    if (unused.length > 0) throw new Error(`prepared query does not use ${[...new Set(unused)]} as parameters`);
    if ((options.named || /^insert into /.test(compiled.sql)) && !statementNames.has(compiled.sql)) {
      statementNames.set(compiled.sql, `mailroom_${statementNames.size + 1}`);
    }
    if (options.sentAhead) sendAhead(compiled.sql);
    return {
      sql: compiled.sql,
      parameters: compiled.parameters.map((parameter) => sources.get(parameter) ?? { constant: parameter }),
    };
  }

  return async function execute(db: Kysely<Database>, values: Values): Promise<Row[]> {
    const { adapter } = db.getExecutor();
    let byShape = templates.get(adapter);
    if (!byShape) {
      byShape = new Map();
      templates.set(adapter, byShape);
    }
    const shape = Object.entries(values)
      .map(([key, value]) => (Array.isArray(value) ? `${key}:${value.length}` : key))
      .join(',');
    let template = byShape.get(shape);
    if (!template) {
      template = compile(db, values);
      byShape.set(shape, template);
    }
    const parameters = template.parameters.map((source) => {
      if ('constant' in source) return source.constant;
      const value = values[source.key];
      return source.index === undefined ? value : (value as ReadonlyArray<unknown>)[source.index];
    });
    const result = await db.executeQuery(CompiledQuery.raw(template.sql, parameters));
    return result.rows as Row[];
  };
}
