import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { type Kysely, sql } from 'kysely';
import { ConfigError, type Logger, startPeriodicTask } from '../core/index.ts';
import type { DatabaseHandle } from './database.ts';

interface Migration {
  name: string;
  up(db: Kysely<unknown>): Promise<void>;
}

interface MigrationsTable {
  mailroom_migrations: { name: string; applied_at: string };
}

const MIGRATIONS_DIR = join(import.meta.dirname, 'migrations');
/** PostgreSQL: how long a migration waits for a table's lock before it lets go and tries again LOCK_RETRY_MS later. */
const MIGRATION_LOCK_TIMEOUT_MS = 200;
const LOCK_RETRY_MS = 1_000;
/** PostgreSQL's lock_timeout error. */
const LOCK_NOT_AVAILABLE = '55P03';

/** Every `NNNN_name.ts` in migrations/, in name order: one list for SQLite and PostgreSQL. */
async function loadMigrations(): Promise<Migration[]> {
  const files = (await readdir(MIGRATIONS_DIR)).filter((file) => /^\d{4}_[\w-]+\.ts$/.test(file)).sort();
  return Promise.all(
    files.map(async (file) => {
      const module = (await import(join(MIGRATIONS_DIR, file))) as Pick<Migration, 'up'>;
      return { name: file.replace(/\.ts$/, ''), up: module.up };
    }),
  );
}

/**
 * Refuses a database that a newer Mailroom migrated: this code would write rows without the columns and tables the
 * newer one relies on, and nothing would say so.
 */
function refuseNewerSchema(applied: Iterable<string>, migrations: Migration[]): void {
  const known = new Set(migrations.map((migration) => migration.name));
  const unknown = [...applied].filter((name) => !known.has(name)).sort();
  if (unknown.length === 0) return;
  throw new ConfigError(
    `The database was migrated by a newer Mailroom (migration ${unknown.at(-1)}, this version knows up to ${migrations.at(-1)?.name}): run that version or a later one`,
  );
}

/**
 * Applies every pending migration and returns the names applied. Each migration runs in its own transaction that
 * first takes a lock (SQLite: BEGIN IMMEDIATE; PostgreSQL: an advisory lock for the schema) and re-reads what is
 * applied, so several processes starting at once apply each migration exactly once. Only the installation's own
 * schema is ever looked at, so other installations on the same server cannot disturb it.
 */
export async function migrateToLatest(handle: DatabaseHandle): Promise<string[]> {
  const migrations = await loadMigrations();
  const db = handle.db as unknown as Kysely<MigrationsTable>;
  return db.connection().execute(async (connection) => {
    const begin = async () => {
      if (handle.kind === 'sqlite') {
        await sql`begin immediate`.execute(connection);
      } else {
        await sql`begin`.execute(connection);
        await sql`select pg_advisory_xact_lock(hashtext(current_schema()))`.execute(connection);
        // A table lock waited for queues every other process's reads and writes of that table behind it, for as long
        // as the transaction holding it (a report, pg_dump) lasts: give up soon and try again.
        await sql.raw(`set local lock_timeout = ${MIGRATION_LOCK_TIMEOUT_MS}`).execute(connection);
      }
    };
    const inLockedTransaction = async <T>(work: () => Promise<T>): Promise<T> => {
      for (;;) {
        await begin();
        try {
          const result = await work();
          await sql`commit`.execute(connection);
          return result;
        } catch (error) {
          await sql`rollback`.execute(connection);
          if ((error as { code?: string }).code !== LOCK_NOT_AVAILABLE) throw error;
        }
        await sleep(LOCK_RETRY_MS);
      }
    };

    await inLockedTransaction(() =>
      connection.schema
        .createTable('mailroom_migrations')
        .ifNotExists()
        .addColumn('name', 'text', (c) => c.primaryKey())
        .addColumn('applied_at', 'text', (c) => c.notNull())
        .execute(),
    );
    refuseNewerSchema(
      (await connection.selectFrom('mailroom_migrations').select('name').execute()).map((row) => row.name),
      migrations,
    );
    const applied: string[] = [];
    for (const migration of migrations) {
      const ran = await inLockedTransaction(async () => {
        const done = await connection
          .selectFrom('mailroom_migrations')
          .select('name')
          .where('name', '=', migration.name)
          .executeTakeFirst();
        if (done) return false;
        await migration.up(connection as unknown as Kysely<unknown>);
        await connection
          .insertInto('mailroom_migrations')
          .values({ name: migration.name, applied_at: new Date().toISOString() })
          .execute();
        return true;
      });
      if (ran) applied.push(migration.name);
    }
    return applied;
  });
}

/**
 * The migrations not applied yet, without applying any: all of them where the installation's tables are not there
 * at all; refused where a newer Mailroom migrated the database. Commands that only read and write rows (the CLI) check this instead of creating an installation.
 */
export async function pendingMigrations(handle: DatabaseHandle): Promise<string[]> {
  const migrations = await loadMigrations();
  const names = migrations.map((migration) => migration.name);
  const db = handle.db as unknown as Kysely<MigrationsTable>;
  let applied: Set<string>;
  try {
    applied = new Set((await db.selectFrom('mailroom_migrations').select('name').execute()).map((row) => row.name));
  } catch (error) {
    // Only the installation's own schema is read (search_path), as migrateToLatest does.
    const missing = (error as { code?: string }).code === '42P01' || /no such table/.test((error as Error).message);
    if (missing) return names;
    throw error;
  }
  refuseNewerSchema(applied, migrations);
  return names.filter((name) => !applied.has(name));
}

/**
 * Calls `onNewer` with the refusal a start would give once a newer Mailroom has migrated the database under this
 * running process (a rolling upgrade): this code would go on writing rows without what the newer one relies on, such
 * as search vectors of its older word rule, which the newer one never builds again. The migrations known are listed
 * once, now, so that newer code put in place under the running process does not count as its own. A failed look (the
 * database unreachable) is logged as the other periodic tasks' are and left to the next one.
 */
export async function watchForNewerSchema(
  handle: DatabaseHandle,
  intervalMs: number,
  logger: Logger,
  onNewer: (refusal: string) => void,
) {
  const migrations = await loadMigrations();
  const db = handle.db as unknown as Kysely<MigrationsTable>;
  return startPeriodicTask(
    'newer schema check',
    async () => {
      const rows = await db.selectFrom('mailroom_migrations').select('name').execute();
      try {
        refuseNewerSchema(
          rows.map((row) => row.name),
          migrations,
        );
      } catch (error) {
        onNewer((error as Error).message);
      }
    },
    intervalMs,
    logger,
  );
}
