import { PostgresAdapter, type QueryExecutor } from 'kysely';

/** Whether a connection or transaction is PostgreSQL's, for the statements and locks only PostgreSQL has. */
export function onPostgres(db: { getExecutor(): QueryExecutor }): boolean {
  return db.getExecutor().adapter instanceof PostgresAdapter;
}
